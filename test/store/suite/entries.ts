// Entries against a Map model: seeded random puts, conditional puts, deletes, transactions
// with checks, TTLs, gets, listings and counts, then a namespace dropped and made again.
import type { Test } from 'tap'
import type { Store } from '../../../server/store/types.js'
import { type Cell, KEYS, NAMESPACES, OPS, PREFIXES, rng, utf8 } from './common.js'

export async function entriesSuite(t: Test, store: Store, seed: number): Promise<void> {
  const r = rng(seed)
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!
  const model = new Map<string, Map<string, Cell>>()
  for (const ns of NAMESPACES) {
    t.equal(await store.createNamespace(ns), true, `${ns} created`)
    t.equal(await store.createNamespace(ns), false, `${ns} exists`)
    model.set(ns, new Map())
  }
  const live = (ns: string, key: string): Cell | undefined => {
    const c = model.get(ns)!.get(key)
    // Entries within 300 ms of their expiry are left out of the comparison: the clocks of
    // the test and the store differ by the time a request takes.
    if (c?.expLo !== undefined && c.expLo <= Date.now() + 300) return undefined
    return c
  }
  const uncertain = (ns: string, key: string) => {
    const c = model.get(ns)!.get(key)
    const now = Date.now()
    return c?.expLo !== undefined && now > c.expLo - 600 && now < c.expHi! + 600
  }
  let failures = 0
  const check = (ok: boolean, what: string) => {
    if (!ok && failures++ < 5) t.fail(`seed ${seed}: ${what}`)
  }
  for (let i = 0; i < OPS && failures === 0; i++) {
    const ns = pick(NAMESPACES)
    const key = pick(KEYS)
    const roll = r()
    const cur = live(ns, key)
    if (roll < 0.35) {
      const value = JSON.stringify({ i, s: 'é\u{1F600}'.repeat(Math.floor(r() * 3)) })
      const cond = r()
      const ttl = r() < 0.15 ? 200 + Math.floor(r() * 1500) : undefined
      const ifVersion = cond < 0.6 ? undefined : cond < 0.8 ? null : cur ? cur.version : 999_999
      if (uncertain(ns, key) && ifVersion !== undefined) continue
      const t0 = Date.now()
      try {
        const w = await store.put(ns, key, Buffer.from(value), { ttlMs: ttl, ifVersion })
        check(
          ifVersion === undefined || (ifVersion === null ? !cur : cur?.version === ifVersion),
          `put ${key} should have conflicted`,
        )
        check(w.created === !cur || uncertain(ns, key), `put ${key} created=${w.created}`)
        model.get(ns)!.set(key, {
          value,
          version: w.version,
          expLo: ttl === undefined ? undefined : t0 + ttl,
          expHi: ttl === undefined ? undefined : Date.now() + ttl,
        })
      } catch (err) {
        check(
          (err as { code?: string }).code === 'CONFLICT',
          `put ${key}: ${(err as Error).message}`,
        )
        check(
          ifVersion !== undefined && !(ifVersion === null ? !cur : cur?.version === ifVersion),
          `put ${key} conflicted wrongly`,
        )
      }
    } else if (roll < 0.5) {
      if (uncertain(ns, key)) continue
      const deleted = await store.delete(ns, key)
      check(deleted === !!cur, `delete ${key} said ${deleted}`)
      model.get(ns)!.delete(key)
    } else if (roll < 0.6) {
      // A transaction of a check, a put and a delete of another key: all or nothing, writes at
      // consecutive versions in op order, a delete of a missing key writing nothing.
      const keys = [pick(KEYS), pick(KEYS)]
      // A key written twice is refused above the seam (invalid_transaction).
      if (keys[0] === keys[1] || keys.some((k) => uncertain(ns, k))) continue
      const checkKey = pick(KEYS)
      if (uncertain(ns, checkKey)) continue
      const c = live(ns, checkKey)
      const holds = r() < 0.7
      const version = holds ? (c ? c.version : null) : c ? c.version + 1000 : 1
      try {
        const res = await store.transact(ns, [
          { op: 'check', key: checkKey, version },
          { op: 'put', key: keys[0]!, value: Buffer.from(`"b${i}"`) },
          { op: 'delete', key: keys[1]! },
        ])
        check(holds, 'a transaction whose check fails must not apply')
        const m = model.get(ns)!
        const put = res.results[1] as { version: number }
        const del = res.results[2] as { deleted: boolean }
        const had = !!live(ns, keys[1]!)
        check(del.deleted === had, `delete ${keys[1]} said ${del.deleted}`)
        check(res.version === put.version + (had ? 1 : 0), 'versions follow op order')
        m.set(keys[0]!, { value: `"b${i}"`, version: put.version })
        m.delete(keys[1]!)
      } catch (err) {
        check(
          !holds && (err as { code?: string }).code === 'CONFLICT',
          `transaction: ${(err as Error).message}`,
        )
        check((err as { index?: number }).index === 0, 'the failed check is named')
      }
    } else if (roll < 0.85) {
      if (uncertain(ns, key)) continue
      const got = await store.get(ns, key)
      // A get that took long enough to reach the key's expiry tells nothing.
      if (uncertain(ns, key)) continue
      check(
        got?.value.toString() === cur?.value && got?.version === cur?.version,
        `get ${ns} ${key}: ${got?.value} v${got?.version}, model ${cur?.value} v${cur?.version}`,
      )
    } else {
      const prefix = pick(PREFIXES)
      const reverse = r() < 0.3
      const limit = 1 + Math.floor(r() * 5)
      const expected = [...model.get(ns)!.keys()]
        .filter((k) => k.startsWith(prefix) && live(ns, k))
        .sort(utf8)
      if (reverse) expected.reverse()
      if ([...model.get(ns)!.keys()].some((k) => uncertain(ns, k))) continue
      const seen: string[] = []
      let after: string | undefined
      for (;;) {
        const page = await store.list(ns, { prefix, after, limit, reverse })
        seen.push(...page.keys)
        if (!page.next) break
        after = page.next
      }
      if ([...model.get(ns)!.keys()].some((k) => uncertain(ns, k))) continue
      check(
        JSON.stringify(seen) === JSON.stringify(expected),
        `list ${ns} "${prefix}"${reverse ? ' reversed' : ''}: ${JSON.stringify(seen)} != ${JSON.stringify(expected)}`,
      )
    }
  }
  // Counts cover what is live; an expired entry not yet reclaimed may still count (the
  // embedded engine reclaims at compaction, Redis at the namespace's next writes).
  await new Promise((res) => setTimeout(res, 1800))
  const size = (ns: string, k: string) =>
    Buffer.byteLength(k) + Buffer.byteLength(model.get(ns)!.get(k)!.value)
  for (const ns of NAMESPACES) {
    const all = [...model.get(ns)!.keys()]
    const liveKeys = all.filter((k) => live(ns, k))
    const counts = (await store.namespaceCounts(ns))!
    t.ok(
      counts.keys >= liveKeys.length && counts.keys <= all.length,
      `${ns}: ${counts.keys} keys counted, ${liveKeys.length} live of ${all.length}`,
    )
    const liveBytes = liveKeys.reduce((n, k) => n + size(ns, k), 0)
    const allBytes = all.reduce((n, k) => n + size(ns, k), 0)
    t.ok(
      counts.bytes >= liveBytes && counts.bytes <= allBytes,
      `${ns}: ${counts.bytes} bytes counted, ${liveBytes} live of ${allBytes}`,
    )
  }
  t.equal(failures, 0, `seed ${seed}: ${OPS} operations agree with the model`)
  for (const ns of NAMESPACES) t.equal(await store.dropNamespace(ns), true)
  t.equal(await store.namespaceCounts(NAMESPACES[0]!), undefined, 'dropped')
  t.equal(await store.createNamespace(NAMESPACES[0]!), true, 'made again')
  t.same((await store.list(NAMESPACES[0]!)).keys, [], 'and empty: nothing of the dropped one')
}
