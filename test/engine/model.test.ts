// Seeded random operations against a Map model, with reopen and compaction between phases.
// A failure prints its seed: rerun with CAIRN_SEED=<seed> to reproduce it.
import { isDeepStrictEqual, inspect } from 'node:util'
import t, { type Test } from 'tap'
import { open } from '../../engine/index.js'
import type { Db } from '../../engine/index.js'
import type { OpenOptions } from '../../engine/types.js'
import { compareUtf8, rng, seedFromEnv, sleep, tempDir } from './helpers.js'

interface Entry {
  value: unknown
  version: number
  /** Expiry bounds: the engine's clock read falls between the two. */
  expLo?: number
  expHi?: number
  ttl?: boolean
}
type Model = Map<string, Map<string, Entry>>

const KEYS = [
  'a',
  'a/1',
  'a/2',
  'a/10',
  'a/b/c',
  'ab',
  'b',
  'b/x',
  'b/y',
  'c',
  '\u00e9t\u00e9',
  '\u00e9',
  '\uFFFD',
  '\u{1F600}',
  '\u{1F600}/1',
  'z',
  'zz',
  'num/1',
  'num/2',
  'num/3',
  'k.long.' + 'x'.repeat(400),
]
const PREFIXES = ['', 'a', 'a/', 'b', '\u00e9', '\u{1F600}', 'num/', 'zz', 'nothing']
const NAMESPACES = ['alpha', 'beta', 'gamma']
const MARGIN = 25
/** TTLs that run out within this many ms are waited for by settle(); longer ones never expire in a run. */
const SHORT_TTL_HORIZON = 60_000

type Rand = () => number
const pick = <T>(r: Rand, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]

function randomValue(r: Rand, depth = 0): unknown {
  const x = r()
  if (x < 0.08) return null
  if (x < 0.14) return r() < 0.5
  if (x < 0.3) return Math.floor(r() * 2000) - 1000
  if (x < 0.36) return Math.round(r() * 1e6) / 1000
  if (x < 0.55)
    return pick(r, ['', 'hello', '\u00e9\u4e2d\u{1F600}', 'x'.repeat(Math.floor(r() * 300))])
  if (x < 0.7) {
    // Raw bytes are a top-level value kind; nested ones are msgpack's business, not the contract's.
    if (depth > 0) return 'bytes'
    const b = Buffer.alloc(Math.floor(r() * 200))
    for (let i = 0; i < b.length; i++) b[i] = Math.floor(r() * 256)
    return b
  }
  if (depth > 2) return 'leaf'
  if (x < 0.85) return Array.from({ length: Math.floor(r() * 4) }, () => randomValue(r, depth + 1))
  const o: Record<string, unknown> = {}
  for (let i = Math.floor(r() * 4); i > 0; i--)
    o[pick(r, ['a', 'b', 'nested', 'k\u00e9y', '0'])] = randomValue(r, depth + 1)
  return o
}

type Status = 'live' | 'expired' | 'unsure'
function status(e: Entry | undefined, now = Date.now()): Status | 'absent' {
  if (!e) return 'absent'
  if (e.expLo === undefined) return 'live'
  if (now < e.expLo - MARGIN) return 'live'
  if (now > e.expHi! + MARGIN) return 'expired'
  return 'unsure'
}

function prune(model: Model) {
  for (const keys of model.values())
    for (const [k, e] of keys) if (status(e) === 'expired') keys.delete(k)
}

/**
 * Waits until every key with a short TTL is surely expired, then drops the expired ones, so
 * nothing expires while a comparison runs (a reopen or a compaction can take longer than a
 * short TTL). Keys with long TTLs stay live throughout.
 */
async function settle(model: Model, ns?: string) {
  for (;;) {
    let latest = 0
    const now = Date.now()
    for (const [name, keys] of model) {
      if (ns !== undefined && name !== ns) continue
      for (const e of keys.values())
        if (
          e.expHi !== undefined &&
          e.expHi - now < SHORT_TTL_HORIZON &&
          status(e, now) !== 'expired'
        )
          latest = Math.max(latest, e.expHi)
    }
    if (latest === 0) break
    await sleep(latest + MARGIN + 2 - now)
  }
  prune(model)
}

function expectedList(
  keys: Map<string, Entry>,
  o: { prefix?: string; after?: string; limit?: number; reverse?: boolean },
) {
  let ks = [...keys.keys()].filter((k) => k.startsWith(o.prefix ?? '')).sort(compareUtf8)
  if (o.reverse) ks.reverse()
  if (o.after !== undefined) {
    const after = o.after
    ks = ks.filter((k) => (o.reverse ? compareUtf8(k, after) < 0 : compareUtf8(k, after) > 0))
  }
  const limit = o.limit ?? 1000
  const page = ks.slice(0, limit)
  return ks.length > limit ? { keys: page, next: page[page.length - 1] } : { keys: page }
}

async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p
    return 'OK'
  } catch (err) {
    return String((err as { code?: string }).code)
  }
}

interface RunConfig {
  label: string
  phases: number
  opsPerPhase: number
  options: OpenOptions
}

async function run(t: Test, cfg: RunConfig) {
  const seed = seedFromEnv('CAIRN_SEED')
  t.comment(`${cfg.label}: seed ${seed} (set CAIRN_SEED=${seed} to reproduce)`)
  const r = rng(seed)
  const dir = tempDir(t, 'model')
  let db: Db = await open(dir, cfg.options)
  const model: Model = new Map()
  const hadTtl = new Set<string>()
  /**
   * Each namespace's version as far as the model knows: every write takes a version above all
   * earlier ones of its namespace. Not exactly the next: an expiry met by a read is a write of
   * its own (a tombstone at the next version), and when that happens is a matter of timing.
   */
  const nsVersion = new Map<string, number>()
  let failures = 0
  const fail = (what: string, detail: unknown) => {
    failures++
    if (failures <= 10)
      t.fail(`${what} (seed ${seed})`, { diagnostic: true, found: inspect(detail, { depth: 5 }) })
  }
  const newVersion = (ns: string, v: number, what: string) => {
    const before = nsVersion.get(ns) ?? 0
    if (!(v > before)) fail(`${what}: version ${v}, not above ${ns}'s ${before}`, v)
    nsVersion.set(ns, v)
  }
  for (const ns of NAMESPACES.slice(0, 2)) {
    await db.createNamespace(ns)
    model.set(ns, new Map())
  }
  const ttlOpt = () => {
    const x = r()
    if (x < 0.12) return { ttlMs: 5 + Math.floor(r() * 40) }
    if (x < 0.2) return { ttlMs: 3_600_000 }
    return {}
  }
  const entryFor = (
    value: unknown,
    version: number,
    ttlMs: number | undefined,
    t0: number,
    t1: number,
  ): Entry =>
    ttlMs === undefined
      ? { value, version }
      : { value, version, expLo: t0 + ttlMs, expHi: t1 + ttlMs, ttl: true }

  for (let phase = 0; phase < cfg.phases; phase++) {
    for (let op = 0; op < cfg.opsPerPhase; op++) {
      const x = r()
      const existing = [...model.keys()]
      const ns = r() < 0.04 ? 'missing-ns' : pick(r, existing.length ? existing : ['missing-ns'])
      const keys = model.get(ns)
      const key = pick(r, KEYS)
      const e = keys?.get(key)
      const st = status(e)
      const where = `phase ${phase} op ${op} ${ns}/${key}`
      if (x < 0.38) {
        const value = randomValue(r)
        const opts: { ttlMs?: number; ifVersion?: number | null } = ttlOpt()
        let expect = 'OK'
        if (!keys) expect = 'NAMESPACE_NOT_FOUND'
        else if (st !== 'unsure' && r() < 0.2) {
          const live = st === 'live'
          const y = r()
          if (y < 0.4) opts.ifVersion = live ? e!.version : null
          else if (y < 0.7) {
            opts.ifVersion = null
            if (live) expect = 'CONFLICT'
          } else {
            opts.ifVersion = live ? e!.version + 1 + Math.floor(r() * 5) : 1
            expect = 'CONFLICT'
          }
        }
        const t0 = Date.now()
        let res: { version: number; created: boolean } | undefined
        const got = await code(db.put(ns, key, value, opts).then((v) => (res = v)))
        const t1 = Date.now()
        if (got !== expect)
          fail(`${where}: put ${inspect(opts)} gave ${got}, model expects ${expect}`, { model: e })
        else if (res) {
          newVersion(ns, res.version, where)
          if (st !== 'unsure' && res.created !== (st !== 'live'))
            fail(`${where}: created ${res.created} but key was ${st}`, e)
          keys!.set(key, entryFor(value, res.version, opts.ttlMs, t0, t1))
          if (opts.ttlMs !== undefined) hadTtl.add(ns)
        }
      } else if (x < 0.52) {
        const opts: { ifVersion?: number } = {}
        let expect: string | boolean = st === 'live'
        if (!keys) expect = 'NAMESPACE_NOT_FOUND'
        else if (st === 'live' && r() < 0.3) {
          if (r() < 0.5) opts.ifVersion = e!.version
          else {
            opts.ifVersion = e!.version + 1
            expect = 'CONFLICT'
          }
        }
        let res: boolean | undefined
        const got = await code(db.delete(ns, key, opts).then((v) => (res = v)))
        const outcome = got === 'OK' ? res : got
        if (outcome === true) nsVersion.set(ns, (nsVersion.get(ns) ?? 0) + 1)
        if (st === 'unsure' && typeof outcome === 'boolean') keys!.delete(key)
        else if (outcome !== expect)
          fail(`${where}: delete ${inspect(opts)} gave ${outcome}, model expects ${expect}`, e)
        else if (outcome === true) keys!.delete(key)
      } else if (x < 0.66) {
        let res: Awaited<ReturnType<Db['get']>>
        const t0 = Date.now()
        const got = await code(db.get(ns, key).then((v) => (res = v)))
        if (!keys) {
          if (got !== 'NAMESPACE_NOT_FOUND')
            fail(`${where}: get on a missing namespace gave ${got}`, res)
        } else if (got !== 'OK') fail(`${where}: get failed with ${got}`, e)
        else checkGet(where, e, res, t0)
      } else if (x < 0.77) {
        // A batch over distinct keys, maybe across namespaces, maybe with checks.
        const n = 1 + Math.floor(r() * 5)
        const ops: Parameters<Db['batch']>[0] = []
        const seen = new Set<string>()
        const planned: {
          ns: string
          key: string
          value?: unknown
          ttlMs?: number
          live?: boolean
        }[] = []
        const useMissing = r() < 0.05
        for (let i = 0; i < n; i++) {
          const bns =
            useMissing && i === n - 1
              ? 'missing-ns'
              : pick(r, existing.length ? existing : ['missing-ns'])
          const bkey = pick(r, KEYS)
          if (seen.has(`${bns}\0${bkey}`)) continue
          seen.add(`${bns}\0${bkey}`)
          if (r() < 0.75) {
            const value = randomValue(r)
            const ttl = ttlOpt()
            ops.push({ type: 'put', ns: bns, key: bkey, value, ...ttl })
            planned.push({ ns: bns, key: bkey, value, ttlMs: ttl.ttlMs })
          } else {
            // A delete of a missing key writes nothing: the model must know which it is.
            const dst = status(model.get(bns)?.get(bkey))
            if (dst === 'unsure') continue
            ops.push({ type: 'delete', ns: bns, key: bkey })
            planned.push({ ns: bns, key: bkey, live: dst === 'live' })
          }
        }
        let expect = planned.some((p) => !model.has(p.ns)) ? 'NAMESPACE_NOT_FOUND' : 'OK'
        const checks: { ns: string; key: string; version: number | null }[] = []
        if (expect === 'OK' && r() < 0.4) {
          for (let i = 1 + Math.floor(r() * 2); i > 0; i--) {
            const cns = pick(r, existing)
            const ckey = pick(r, KEYS)
            const ce = model.get(cns)!.get(ckey)
            const cst = status(ce)
            if (cst === 'unsure') continue
            const right = r() < 0.7
            const current = cst === 'live' ? ce!.version : null
            checks.push({
              ns: cns,
              key: ckey,
              version: right ? current : current === null ? 1 : null,
            })
            if (!right) expect = 'CONFLICT'
          }
        }
        let res: { version: number } | undefined
        const t0 = Date.now()
        const got = await code(
          db.batch(ops, checks.length ? { checks } : undefined).then((v) => (res = v)),
        )
        const t1 = Date.now()
        if (got !== expect)
          fail(`phase ${phase} op ${op}: batch gave ${got}, model expects ${expect}`, {
            ops,
            checks,
          })
        else if (res) {
          // A namespace's writes in one batch take consecutive versions in op order, above all
          // its earlier ones; the batch answers its last write's. A put's version is read
          // back to anchor the rest of its namespace's.
          const writes = planned.filter((p) => 'value' in p || p.live)
          const last = writes.at(-1)
          for (const ns of new Set(writes.map((p) => p.ns))) {
            const mine = writes.filter((p) => p.ns === ns)
            let first: number | undefined
            if (last && ns === last.ns) first = res.version - mine.length + 1
            mine.forEach((p, i) => {
              if (!('value' in p)) return
              const got = db.getNow(ns, p.key)?.version
              if (got === undefined) return
              if (first === undefined) first = got - i
              else if (got !== first + i)
                fail(
                  `batch phase ${phase} op ${op}: ${ns}/${p.key} at ${got}, not ${first + i}`,
                  ops,
                )
            })
            const before = nsVersion.get(ns) ?? 0
            if (first !== undefined && !(first > before))
              fail(`batch phase ${phase} op ${op}: ${ns} from ${first}, not above ${before}`, ops)
            const m = model.get(ns)!
            mine.forEach((p, i) => {
              if ('value' in p)
                m.set(p.key, entryFor(p.value, (first ?? before + 1) + i, p.ttlMs, t0, t1))
              else m.delete(p.key)
              if (p.ttlMs !== undefined) hadTtl.add(ns)
            })
            nsVersion.set(ns, first !== undefined ? first + mine.length - 1 : before + mine.length)
          }
        }
      } else if (x < 0.85) {
        if (!keys || st === 'unsure' || e?.ttl) continue
        const delta = Math.floor(r() * 11) - 5
        const isNum = st !== 'live' || typeof e!.value === 'number'
        let res: number | undefined
        const got = await code(db.increment(ns, key, delta).then((v) => (res = v)))
        if (!isNum) {
          if (got !== 'NOT_A_NUMBER')
            fail(`${where}: increment of ${inspect(e!.value)} gave ${got}`, e)
        } else if (got !== 'OK') fail(`${where}: increment gave ${got}`, e)
        else {
          const want = (st === 'live' ? (e!.value as number) : 0) + delta
          if (res !== want) fail(`${where}: increment gave ${res}, model expects ${want}`, e)
          const after = await db.get(ns, key)
          if (!after || after.value !== want) fail(`${where}: value after increment`, after)
          else {
            newVersion(ns, after.version, `${where} increment`)
            keys.set(key, { value: want, version: after.version })
          }
        }
      } else if (x < 0.95) {
        if (!keys) continue
        await settle(model, ns)
        const o = {
          prefix: r() < 0.7 ? pick(r, PREFIXES) : undefined,
          after: r() < 0.3 ? pick(r, KEYS) : undefined,
          limit: r() < 0.7 ? 1 + Math.floor(r() * 12) : undefined,
          reverse: r() < 0.3,
        }
        const { version, ...res } = await db.list(ns, o)
        const want = expectedList(keys, o)
        if (version! < (nsVersion.get(ns) ?? 0))
          fail(`phase ${phase} op ${op}: list ${ns} at version ${version}`, nsVersion.get(ns))
        if (!isDeepStrictEqual({ ...res }, want))
          fail(`phase ${phase} op ${op}: list ${ns} ${inspect(o)}`, { got: res, want })
      } else if (x < 0.975) {
        const dns = pick(r, NAMESPACES)
        const got = await db.dropNamespace(dns)
        if (got !== model.has(dns)) fail(`dropNamespace ${dns} gave ${got}`, [...model.keys()])
        model.delete(dns)
        nsVersion.delete(dns)
        hadTtl.delete(dns)
        if (r() < 0.5) {
          await db.createNamespace(dns)
          model.set(dns, new Map())
        }
      } else {
        const cns = pick(r, NAMESPACES)
        const got = await db.createNamespace(cns)
        if (got !== !model.has(cns)) fail(`createNamespace ${cns} gave ${got}`, [...model.keys()])
        if (!model.has(cns)) model.set(cns, new Map())
      }
    }

    await settle(model)
    await compareAll(`after phase ${phase}`)
    const y = r()
    if (y < 0.4 || phase === cfg.phases - 1) {
      await db.close()
      db = await open(dir, cfg.options)
      await compareAll(`after reopen ${phase}`)
    }
    if (y > 0.3) {
      await db.compact()
      await compareAll(`after compact ${phase}`)
    }
    if (y > 0.8) {
      await db.close()
      db = await open(dir, cfg.options)
      await compareAll(`after compact and reopen ${phase}`)
    }
  }
  // Versions keep increasing after a reopen.
  const ns0 = [...model.keys()][0] ?? 'alpha'
  await db.createNamespace(ns0)
  if (!model.has(ns0)) nsVersion.delete(ns0)
  newVersion(ns0, (await db.put(ns0, 'final', 1)).version, 'put after the last reopen')
  await db.close()
  t.equal(failures, 0, `${cfg.label}: no divergence from the model (seed ${seed})`)

  /**
   * `t0` is when the get was called: the engine read its clock somewhere between then and
   * now, so a key whose state differs between the two is unsure, however long the call took.
   */
  function checkGet(
    where: string,
    e: Entry | undefined,
    res: Awaited<ReturnType<Db['get']>>,
    t0: number,
  ) {
    const before = status(e, t0)
    const after = status(e)
    const st = before === after ? after : 'unsure'
    if (st === 'unsure') return
    if (st !== 'live') {
      if (res !== undefined) fail(`${where}: get found a key the model lacks`, { res, e })
      return
    }
    if (!res) return fail(`${where}: get missed a live key`, e)
    if (!isDeepStrictEqual(res.value, e!.value))
      fail(`${where}: value differs`, { got: res.value, want: e!.value })
    if (res.version !== e!.version) fail(`${where}: version ${res.version}, model ${e!.version}`, e)
    if (e!.ttl) {
      if (res.expiresAt === undefined || res.expiresAt < e!.expLo! || res.expiresAt > e!.expHi!)
        fail(`${where}: expiresAt ${res.expiresAt} outside [${e!.expLo}, ${e!.expHi}]`, e)
    } else if (res.expiresAt !== undefined)
      fail(`${where}: expiresAt ${res.expiresAt} on a key without TTL`, e)
  }

  async function compareAll(when: string) {
    const names = db
      .namespaces()
      .map((n) => n.name)
      .sort()
    if (!isDeepStrictEqual(names, [...model.keys()].sort()))
      fail(`${when}: namespaces`, { got: names, want: [...model.keys()] })
    for (const [ns, keys] of model) {
      if (!db.hasNamespace(ns)) fail(`${when}: hasNamespace(${ns}) false`, ns)
      const got = (await db.list(ns, { limit: 10_000 })).keys
      const want = [...keys.keys()].sort(compareUtf8)
      // Counts are compared where no TTL was ever set, so lazily reaped expiries cannot blur them.
      const counted = db.namespaceStats(ns)?.keys
      if (!hadTtl.has(ns) && counted !== want.length)
        fail(`${when}: namespaceStats(${ns}).keys ${counted}, model ${want.length}`, ns)
      if (!isDeepStrictEqual(got, want)) fail(`${when}: keys of ${ns}`, { got, want })
      const rev = (await db.list(ns, { limit: 10_000, reverse: true })).keys
      if (!isDeepStrictEqual(rev, [...want].reverse()))
        fail(`${when}: reverse keys of ${ns}`, { rev, want })
      for (const key of KEYS) {
        const t0 = Date.now()
        checkGet(`${when} ${ns}/${key}`, keys.get(key), await db.get(ns, key), t0)
      }
    }
    t.pass(`${cfg.label}: compared ${when}`)
  }
}

t.test('in-memory durability, tiny segments, background compaction', (t) =>
  run(t, {
    label: 'none',
    phases: 8,
    opsPerPhase: 300,
    options: {
      durability: 'none',
      segmentBytes: 4096,
      compactionMinDeadBytes: 16 * 1024,
      compactionDeadRatio: 0.3,
    },
  }),
)

t.test('durable writes, no value cache', (t) =>
  run(t, {
    label: 'always',
    phases: 4,
    opsPerPhase: 150,
    options: { durability: 'always', cacheBytes: 0, segmentBytes: 64 * 1024 },
  }),
)
