// History on a real Redis Cluster, through the store seam (docs/redis.md, "History"): a window
// bounded by bytes drops the oldest versions first and moves historyFrom past them; one bounded
// by time lets versions go once superseded before its start; a window turned off forgets what
// it kept (no key of it is left); a namespace without a window keeps nothing; and the
// history of writes acknowledged (after WAIT) survives the failover of their master.
import Redis from 'ioredis'
import t from 'tap'
import { clusterFor } from '../helpers/redis-cluster.js'
import { openStore } from '../../server/store/open.js'
import type { EntryHistory, Store } from '../../server/store/types.js'

const b = (s: string) => Buffer.from(s)
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: { code?: string }) => String(e.code),
  )

const cluster = await clusterFor(t)
if (cluster) {
  const store: Store = await openStore({ dataDir: '', store: cluster.url, durability: 'always' })
  t.teardown(() => store.close())
  const h: EntryHistory = store.history!
  const raw = new Redis.Cluster(cluster.nodes.map((n) => ({ host: '127.0.0.1', port: n.port })))
  t.teardown(() => raw.disconnect())
  /** The history's keys of a namespace, on the master of its slot. */
  const historyKeys = async (ns: string) => {
    const slot = Number(await raw.cluster('KEYSLOT', `c:{n:${ns}}:m`))
    const all: string[] = []
    for (const m of raw.nodes('master'))
      all.push(...((await m.cluster('GETKEYSINSLOT', slot, 10_000)) as string[]))
    return all.filter((k) => /:h\d+:/.test(k))
  }

  t.test('a window bounded by bytes drops the oldest first', async (t) => {
    await store.createNamespace('hb/a')
    // Each kept state is its key (1 byte) and its value (99 bytes): 100 bytes; 1,000 hold 10.
    await h.setWindow('hb/a', { seconds: 3600, bytes: 1000 })
    const start = (await h.window('hb/a')).from
    const versions: number[] = []
    for (let i = 0; i < 40; i++)
      versions.push((await store.put('hb/a', 'k', b(`"${String(i).padStart(97, '0')}"`))).version)
    const w = await h.window('hb/a')
    t.ok(w.bytes <= 1000, `no more than the bound is held (${w.bytes})`)
    t.ok(w.bytes >= 900, `and the bound is used (${w.bytes})`)
    t.ok(w.from.version > start.version, 'historyFrom moved past what was dropped')
    const kept = await h.versions('hb/a', 'k', { limit: 100 })
    t.same(
      kept.map((v) => v.version),
      versions.slice(-kept.length).reverse(),
      'what is left is the newest, in order',
    )
    t.ok(kept.length >= 10 && kept.length <= 11, `the live one and ten kept (${kept.length})`)
    const newestKept = versions[versions.length - 2]!
    t.equal(
      String((await h.getAt('hb/a', 'k', { version: newestKept }))?.value).slice(-3),
      '38"',
      'a version inside the bound reads as it was',
    )
    t.equal(await codeOf(h.getAt('hb/a', 'k', { version: versions[0]! })), 'HISTORY_EXPIRED')
    t.equal(
      await codeOf(h.getAt('hb/a', 'k', { version: w.from.version - 1 })),
      'HISTORY_EXPIRED',
      'just before historyFrom is gone',
    )
    t.equal(await codeOf(h.getAt('hb/a', 'k', { version: w.from.version })), 'ok')
    // Another key's writes push this key's oldest out too: the bound is the namespace's.
    for (let i = 0; i < 10; i++) await store.put('hb/a', 'j', b(`"${'x'.repeat(97)}"`))
    t.ok((await h.window('hb/a')).bytes <= 1000, 'still within the bound')
    t.ok(
      (await h.versions('hb/a', 'k', { limit: 100 })).length < kept.length,
      "the other key's versions took the oldest places",
    )
    // A deleted key is named in :d while its tombstone is kept, and leaves it with it.
    await store.delete('hb/a', 'j')
    const named = async () => (await historyKeys('hb/a')).filter((k) => k.endsWith(':d'))
    t.equal((await named()).length, 1, 'the deleted key is named')
    for (let i = 0; i < 20; i++) await store.put('hb/a', 'k', b(`"${'y'.repeat(97)}"`))
    t.same(await named(), [], 'and no longer once its tombstone is pushed out')
    t.equal(
      await h.getAt('hb/a', 'j', { version: (await h.window('hb/a')).from.version }),
      undefined,
    )
  })

  t.test('PUTs coalesced into one call keep the byte count true', async (t) => {
    await store.createNamespace('hc/a')
    await h.setWindow('hc/a', { seconds: 3600, bytes: 1000 })
    const v = (i: number) => b(`"${String(i).padStart(97, '0')}"`)
    // Sent in one turn: one PUTS call (commands.ts) whose writes each keep and trim.
    for (let round = 0; round < 4; round++)
      await Promise.all(Array.from({ length: 30 }, (_, i) => store.put('hc/a', `k${i % 3}`, v(i))))
    const w = await h.window('hc/a')
    let held = 0
    for (const k of ['k0', 'k1', 'k2'])
      for (const x of await h.versions('hc/a', k, { limit: 1000 }))
        if (x.value && x.version !== (await store.get('hc/a', k))?.version)
          held += 2 + x.value.length
    t.equal(w.bytes, held, `the count is what is kept (${held})`)
    t.ok(held <= 1000 && held >= 800, `and the bound is used, not undercut (${held})`)
  })

  t.test('a window bounded by time lets superseded versions go', async (t) => {
    await store.createNamespace('ht/a')
    await h.setWindow('ht/a', { seconds: 1, bytes: 1 << 30 })
    const v1 = (await store.put('ht/a', 'k', b('1'))).version
    await store.put('ht/a', 'k', b('2'))
    t.equal(String((await h.getAt('ht/a', 'k', { version: v1 }))?.value), '1')
    await sleep(1300)
    t.equal(
      await codeOf(h.getAt('ht/a', 'k', { version: v1 })),
      'HISTORY_EXPIRED',
      'refused at once when older than the window, before any write trims it',
    )
    const before = (await h.window('ht/a')).bytes
    t.ok(before > 0, 'still held until a write trims')
    // Trimming by time runs once in 8 versions: within the next 8 writes it is gone.
    let writes = 0
    while ((await h.window('ht/a')).bytes > 0 && writes < 8) {
      await store.put('ht/a', `j${writes}`, b('3'))
      writes++
    }
    t.equal((await h.window('ht/a')).bytes, 0, `the writes after let it go (${writes})`)
    t.equal((await h.versions('ht/a', 'k')).length, 1, 'only the live version is left')
  })

  t.test('a window turned off forgets what it kept; none keeps nothing', async (t) => {
    await store.createNamespace('ho/a')
    await h.setWindow('ho/a', { seconds: 3600, bytes: 1 << 30 })
    for (let i = 0; i < 50; i++) await store.put('ho/a', `k${i % 5}`, b(String(i)))
    await store.delete('ho/a', 'k1')
    t.ok((await historyKeys('ho/a')).length > 0, 'history keys while the window is on')
    await h.setWindow('ho/a', { seconds: 0, bytes: 0 })
    t.same(await historyKeys('ho/a'), [], 'none left once it is off')
    t.same((await h.window('ho/a')).bytes, 0)
    const v = (await store.put('ho/a', 'k0', b('x'))).version
    await store.put('ho/a', 'k0', b('y'))
    t.equal(await codeOf(h.getAt('ho/a', 'k0', { version: v })), 'HISTORY_EXPIRED')
    t.same(await historyKeys('ho/a'), [], 'writes without a window keep nothing')
    // On again: history starts at that moment; nothing from before answers for the gap.
    await h.setWindow('ho/a', { seconds: 3600, bytes: 1 << 30 })
    const from = (await h.window('ho/a')).from.version
    t.equal(from, v + 1, 'from the version it was turned on at')
    t.equal(await h.getAt('ho/a', 'k1', { version: from }), undefined, 'k1 is still deleted')
    await store.put('ho/a', 'k1', b('back'))
    t.equal(await h.getAt('ho/a', 'k1', { version: from }), undefined, 'and was then')
    await store.dropNamespace('ho/a')
    t.same(await historyKeys('ho/a'), [], 'a dropped namespace leaves no history behind')
  })

  t.test('listings at a point page through many deleted keys, in bounded steps', async (t) => {
    await store.createNamespace('hl/a')
    await h.setWindow('hl/a', { seconds: 3600, bytes: 1 << 30 })
    const name = (i: number) => `d${String(i).padStart(4, '0')}`
    const all = Array.from({ length: 2600 }, (_, i) => name(i))
    for (let i = 0; i < all.length; i += 1000)
      await store.transact(
        'hl/a',
        all.slice(i, i + 1000).map((key) => ({ op: 'put' as const, key, value: b(`"${key}"`) })),
      )
    const point = { version: await store.feed.version('hl/a') }
    for (let i = 0; i < 2500; i += 1000)
      await store.transact(
        'hl/a',
        all.slice(i, Math.min(i + 1000, 2500)).map((key) => ({ op: 'delete' as const, key })),
      )
    await store.put('hl/a', 'e1', b('"e1"'))
    const walk = async (at: { version: number }, o: { limit: number; reverse?: boolean }) => {
      const keys: string[] = []
      let after: string | undefined
      let short = 0
      for (;;) {
        const page = await h.listAt('hl/a', { ...o, after, include: { values: true } }, at)
        if (page.version !== at.version) t.fail(`a page at ${page.version}`)
        for (const e of page.entries!)
          if (String(e.value) !== `"${e.key}"`) t.fail(`${e.key} read as ${e.value}`)
        keys.push(...page.keys)
        if (page.next === undefined) return { keys, short }
        if (page.keys.length < o.limit) short++
        after = page.next
      }
    }
    const now = { version: await store.feed.version('hl/a') }
    const present = await walk(now, { limit: 50 })
    t.same(present.keys, [...all.slice(2500), 'e1'], 'the live keys')
    t.ok(present.short > 0, 'a page ended early rather than look at every deleted key')
    const then = await walk(point, { limit: 1000 })
    t.same(then.keys, all, 'at the point, every key, deleted since or not')
    const back = await walk(point, { limit: 300, reverse: true })
    t.same(back.keys, all.slice().reverse(), 'the same backwards')
    const range = await h.listAt('hl/a', { start: 'd1000', end: 'd1010', limit: 100 }, point)
    t.same(range.keys, all.slice(1000, 1010), 'a range at the point')
    t.same((await h.listAt('hl/a', { prefix: 'd25', limit: 1000 }, now)).keys.length, 100)
  })

  t.test('history of acknowledged writes survives a failover', async (t) => {
    await store.createNamespace('hf/a')
    await h.setWindow('hf/a', { seconds: 3600, bytes: 1 << 30 })
    const acked: { version: number; value: string }[] = []
    for (let i = 0; i < 200; i++) {
      const value = `"v${i}"`
      acked.push({ version: (await store.put('hf/a', 'k', b(value))).version, value })
    }
    await store.delete('hf/a', 'k')
    const slot = Number(await raw.cluster('KEYSLOT', 'c:{n:hf/a}:m'))
    const ranges = (await raw.cluster('SLOTS')) as [number, number, [string, number]][]
    const port = ranges.find(([from, to]) => slot >= from && slot <= to)?.[2]?.[1]
    const victim = cluster.nodes.find((n) => n.port === port)!
    await cluster.kill(victim)
    await cluster.waitHealthy(30_000)
    // A read may meet the old master's connections closing: asked again until answered.
    let got: Awaited<ReturnType<EntryHistory['versions']>> | undefined
    for (let i = 0; i < 100 && got === undefined; i++)
      got = await h
        .versions('hf/a', 'k', { limit: 1000 })
        .catch(() => sleep(200).then(() => undefined))
    t.ok(got, 'read after the failover')
    t.same(got![0], { version: acked.at(-1)!.version + 1, at: got![0]!.at, deleted: true })
    t.same(
      got!.slice(1).map((v) => ({ version: v.version, value: String(v.value) })),
      acked.slice().reverse(),
      'every acknowledged version is there, with its value',
    )
    for (const a of [acked[0]!, acked[100]!])
      t.equal(String((await h.getAt('hf/a', 'k', { version: a.version }))?.value), a.value)
  })
}
