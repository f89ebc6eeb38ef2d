// History windows: reads at a point (getAt, listAt, history) checked against a model of
// random writes, across compaction and a reopen, on a real engine in a real directory. Time
// comes from the engine's injectable clock, moved by the test: nothing waits on the wall.
import fs from 'node:fs'
import path from 'node:path'
import t, { type Test } from 'tap'
import { type Db, open } from '../../engine/index.js'
import type { HistoryPoint } from '../../engine/types.js'
import { compareUtf8, errorCode, rng, seedFromEnv, tempDir } from './helpers.js'

const KEYS = ['a', 'ab', 'b/1', 'b/2', 'b/3', 'c', 'é', 'z', '\u{1F600}', 'b/10']

interface State {
  value: unknown
  version: number
  expiresAt?: number
}

/** What every version and time of a namespace held, as the writes made it. */
class Model {
  /** states[v]: the namespace after version v (index 0: before any write). */
  states: Map<string, State>[] = [new Map()]
  /** times[v]: when version v was committed. */
  times: number[] = [0]
  /** written[v]: the key version v wrote. */
  written: string[] = ['']

  get version(): number {
    return this.states.length - 1
  }

  write(at: number, key: string, s: State | null): void {
    const next = new Map(this.states.at(-1)!)
    if (s === null) next.delete(key)
    else next.set(key, s)
    this.states.push(next)
    this.times.push(at)
    this.written.push(key)
  }

  /** The version current at time t. */
  versionAt(t: number): number {
    let v = 0
    while (v + 1 < this.times.length && this.times[v + 1]! <= t) v++
    return v
  }
}

function clockAt(start: number) {
  const c = { now: start, fn: () => c.now }
  return c
}

/** Random writes: puts, deletes and batches over KEYS, the clock moving 0 to 3 ms before each. */
async function randomWrites(
  t: Test,
  db: Db,
  ns: string,
  m: Model,
  clock: { now: number },
  r: () => number,
  count: number,
): Promise<void> {
  for (let i = 0; i < count; i++) {
    clock.now += Math.floor(r() * 4)
    const key = KEYS[Math.floor(r() * KEYS.length)]!
    const roll = r()
    if (roll < 0.2) {
      const existed = m.states.at(-1)!.has(key)
      const gone = await db.delete(ns, key)
      t.equal(gone, existed)
      if (existed) m.write(clock.now, key, null)
    } else if (roll < 0.3) {
      const keys = [key, KEYS[Math.floor(r() * KEYS.length)]!]
      const ops = keys.map((k, j) =>
        r() < 0.3
          ? { type: 'delete' as const, ns, key: k }
          : { type: 'put' as const, ns, key: k, value: { i, j } },
      )
      // A delete writes nothing when its key was missing before the batch and the batch did
      // not put it first, as the engine has it.
      const before = m.states.at(-1)!
      const put = new Set<string>()
      const written: typeof ops = []
      for (const op of ops) {
        if (op.type === 'delete' && !before.has(op.key) && !put.has(op.key)) continue
        written.push(op)
        if (op.type === 'put') put.add(op.key)
      }
      await db.batch(ops)
      for (const op of written)
        m.write(
          clock.now,
          op.key,
          op.type === 'put' ? { value: op.value, version: m.version + 1 } : null,
        )
    } else {
      const raw = r() < 0.3
      const value = raw ? Buffer.from([0, i & 255, 7]) : `v${i}`
      const expiresAt = r() < 0.2 ? 4_000_000_000_000 + i : undefined
      const res = await db.put(ns, key, value, expiresAt ? { expiresAt } : undefined)
      const s: State = { value, version: res.version }
      if (expiresAt) s.expiresAt = expiresAt
      m.write(clock.now, key, s)
      t.equal(res.version, m.version)
    }
  }
}

/** Every key at every version from `fromVersion`, and at sampled times, equals the model. */
function checkGets(t: Test, db: Db, ns: string, m: Model, r: () => number, label: string) {
  const from = db.historyFrom(ns)
  let bad = 0
  let checked = 0
  const expect = (point: HistoryPoint, v: number) => {
    for (const key of KEYS) {
      const want = m.states[v]!.get(key)
      const got = db.getAt(ns, key, point)
      checked++
      const same =
        want === undefined
          ? got === undefined
          : got !== undefined &&
            got.version === want.version &&
            JSON.stringify(got.value) === JSON.stringify(want.value) &&
            got.expiresAt === want.expiresAt
      if (!same && bad++ < 5)
        t.fail(`${label}: ${key} at ${JSON.stringify(point)}`, { got, want, v })
    }
  }
  for (let v = from.version; v <= m.version; v++) expect({ version: v }, v)
  const span = m.times.at(-1)! - from.at
  for (let i = 0; i < 60; i++) {
    const at = from.at + Math.floor(r() * (span + 1))
    expect({ at }, m.versionAt(at))
  }
  t.equal(bad, 0, `${label}: ${checked} reads at a point equal the model`)
}

/** Pages of listAt, with random bounds, equal the model's keys in UTF-8 order. */
async function checkLists(t: Test, db: Db, ns: string, m: Model, r: () => number, label: string) {
  const from = db.historyFrom(ns)
  let bad = 0
  for (let i = 0; i < 40; i++) {
    const v = from.version + Math.floor(r() * (m.version - from.version + 1))
    const sorted = [...KEYS].sort(compareUtf8)
    const pick = () => sorted[Math.floor(r() * sorted.length)]!
    const opts: { prefix?: string; start?: string; end?: string; reverse?: boolean } = {}
    if (r() < 0.3) opts.prefix = 'b/'
    if (r() < 0.3) opts.start = pick()
    if (r() < 0.3) opts.end = pick()
    if (opts.start && opts.end && compareUtf8(opts.start, opts.end) > 0)
      [opts.start, opts.end] = [opts.end, opts.start]
    if (
      opts.prefix &&
      ((opts.start && !opts.start.startsWith('b/')) || (opts.end && !opts.end.startsWith('b/')))
    ) {
      delete opts.start
      delete opts.end
    }
    opts.reverse = r() < 0.4
    const want = [...m.states[v]!.entries()]
      .filter(
        ([k]) =>
          k.startsWith(opts.prefix ?? '') &&
          (opts.start === undefined || compareUtf8(k, opts.start) >= 0) &&
          (opts.end === undefined || compareUtf8(k, opts.end) < 0),
      )
      .sort(([a], [b]) => (opts.reverse ? compareUtf8(b, a) : compareUtf8(a, b)))
      .map(([k, s]) => [k, s.version, JSON.stringify(s.value)])
    const got: unknown[] = []
    let after: string | undefined
    const limit = 1 + Math.floor(r() * 3)
    for (let pages = 0; pages < 50; pages++) {
      const page = await db.listAt(ns, { ...opts, after, limit, values: true }, { version: v })
      t.equal(page.version, v)
      for (const e of page.entries) got.push([e.key, e.version, JSON.stringify(e.value)])
      if (page.next === undefined) break
      after = page.next
    }
    if (JSON.stringify(got) !== JSON.stringify(want) && bad++ < 5)
      t.fail(`${label}: listAt ${JSON.stringify(opts)} at ${v}`, { got, want })
  }
  t.equal(bad, 0, `${label}: 40 listings at a point equal the model, page by page`)
}

t.test(
  'reads at a point equal what the namespace held, across compaction and a reopen',
  async (t) => {
    const seed = seedFromEnv('CAIRN_SEED')
    t.comment(`seed ${seed} (CAIRN_SEED=${seed} to reproduce)`)
    const r = rng(seed)
    const dir = tempDir(t, 'window')
    const clock = clockAt(1_700_000_000_000)
    const opts = {
      clock: clock.fn,
      durability: 'none' as const,
      segmentBytes: 4096,
      autoCompact: false,
    }
    let db = await open(dir, opts)
    await db.createNamespace('h')
    await db.createNamespace('other')
    db.setHistory('h', { seconds: 3600, bytes: 1 << 24 })
    const m = new Model()
    await randomWrites(t, db, 'h', m, clock, r, 300)
    // Writes to another namespace are not in this one's history.
    for (let i = 0; i < 20; i++) await db.put('other', KEYS[i % KEYS.length]!, i)
    checkGets(t, db, 'h', m, r, 'written')
    await checkLists(t, db, 'h', m, r, 'written')
    t.ok(db.namespaceStats('h')!.historyBytes! > 0, 'history bytes are counted')
    t.equal(db.namespaceStats('other')!.historyBytes, 0, 'a namespace without a window keeps none')

    await db.compact()
    checkGets(t, db, 'h', m, r, 'after a full compaction')
    await randomWrites(t, db, 'h', m, clock, r, 200)
    await db.compact({ full: false })
    await db.close()

    db = await open(dir, opts)
    t.teardown(() => db.close())
    t.same(db.getHistory('h'), { seconds: 3600, bytes: 1 << 24 }, 'the window is kept across opens')
    checkGets(t, db, 'h', m, r, 'after a reopen')
    await checkLists(t, db, 'h', m, r, 'after a reopen')
    await randomWrites(t, db, 'h', m, clock, r, 100)
    checkGets(t, db, 'h', m, r, 'written after the reopen')

    // history(): every version of a key, newest first, each as the model had it.
    for (const key of KEYS) {
      const want: unknown[] = []
      for (let v = m.version; v >= 1; v--) {
        if (m.written[v] !== key) continue
        const after = m.states[v]!.get(key)
        if (after !== undefined)
          want.push({
            version: v,
            at: m.times[v],
            value: JSON.stringify(after.value),
            expiresAt: after.expiresAt,
          })
        else want.push({ version: v, at: m.times[v], deleted: true })
      }
      const got = db.history('h', key, { limit: 10_000 }).map((h) =>
        h.deleted
          ? { version: h.version, at: h.at, deleted: true }
          : {
              version: h.version,
              at: h.at,
              value: JSON.stringify(h.value),
              expiresAt: h.expiresAt,
            },
      )
      t.same(got, want, `history of ${key}`)
      const page = db.history('h', key, {
        limit: 2,
        before: (want[1] as { version: number } | undefined)?.version ?? 0,
      })
      t.same(
        page.map((h) => h.version),
        (want.slice(2, 4) as { version: number }[]).map((w) => w.version),
        `a page of ${key}'s history before a version`,
      )
    }
  },
)

t.test('history leaves its window by time and by bytes, oldest first', async (t) => {
  const r = rng(7)
  const dir = tempDir(t, 'window-expiry')
  const clock = clockAt(1_700_000_000_000)
  const opts = {
    clock: clock.fn,
    durability: 'none' as const,
    segmentBytes: 4096,
    autoCompact: false,
  }
  let db = await open(dir, opts)
  t.teardown(() => db.close())
  await db.createNamespace('h')
  db.setHistory('h', { seconds: 10, bytes: 1 << 24 })
  const m = new Model()
  const start = clock.now
  await randomWrites(t, db, 'h', m, clock, r, 200)
  t.equal(db.historyFrom('h').at, start, 'history begins when the window was set')
  // 25 seconds on: only the last 10 remain.
  for (let s = 0; s < 25; s++) {
    clock.now += 1000
    await randomWrites(t, db, 'h', m, clock, r, 4)
  }
  const from = db.historyFrom('h')
  t.equal(from.at, clock.now - 10_000, 'the oldest readable time is the window')
  t.equal(from.version, m.versionAt(from.at), 'and its version is the one current then')
  t.equal(await errorCode(() => db.getAt('h', 'a', { at: from.at - 1 })), 'HISTORY_EXPIRED')
  t.equal(
    await errorCode(() => db.getAt('h', 'a', { version: from.version - 1 })),
    'HISTORY_EXPIRED',
  )
  checkGets(t, db, 'h', m, r, 'inside the window')
  const windowFile = path.join(dir, 'window-00000001.win')
  const before = fs.statSync(windowFile).size
  // Writes go on while the pass, and the window's rewrite after it, run.
  const compacted = db.compact()
  await randomWrites(t, db, 'h', m, clock, r, 30)
  await compacted
  t.ok(fs.statSync(windowFile).size < before / 2, 'compaction reclaims what left the window')
  checkGets(t, db, 'h', m, r, 'after the reclaim')
  await randomWrites(t, db, 'h', m, clock, r, 30)
  checkGets(t, db, 'h', m, r, 'written after the reclaim')

  // The byte bound: the oldest goes first, and what is left still reads right.
  db.setHistory('h', { seconds: 3600, bytes: 2048 })
  await randomWrites(t, db, 'h', m, clock, r, 300)
  const stats = db.namespaceStats('h')!
  t.ok(stats.historyBytes! <= 2048, `history held within its bound (${stats.historyBytes} bytes)`)
  const bounded = db.historyFrom('h')
  t.ok(bounded.version > from.version, 'the oldest went first')
  t.equal(
    await errorCode(() => db.getAt('h', 'a', { version: bounded.version - 1 })),
    'HISTORY_EXPIRED',
  )
  checkGets(t, db, 'h', m, r, 'within the byte bound')
  await checkLists(t, db, 'h', m, r, 'within the byte bound')
  await db.compact()
  await db.close()
  db = await open(dir, opts)
  t.same(db.historyFrom('h'), bounded, 'a reopen after the rewrite keeps the oldest point')
  checkGets(t, db, 'h', m, r, 'reopened after the rewrite')
})

t.test(
  'a walk at a point in pages, over a window of thousands of keys, stays right while keys join and leave the window',
  async (t) => {
    const r = rng(31)
    const dir = tempDir(t, 'window-walk')
    const clock = clockAt(1_700_000_000_000)
    const db = await open(dir, { clock: clock.fn, durability: 'none', autoCompact: false })
    t.teardown(() => db.close())
    await db.createNamespace('w')
    db.setHistory('w', { seconds: 60, bytes: 1 << 30 })
    // Keys whose UTF-8 order is not their UTF-16 order (U+FF5E before an astral one) among
    // plain ones: thousands, so the window's keys span many chunks of its sorted list.
    const keys: string[] = []
    for (let i = 0; i < 3000; i++)
      keys.push(
        i % 50 === 7
          ? `k/${i}\u{1F600}`
          : i % 50 === 8
            ? `k/${i}\uFF5E`
            : `k/${String(i).padStart(5, '0')}`,
      )
    const state = new Map<string, { version: number; value: string }>()
    const put = async (key: string, value: string) => {
      const res = await db.put('w', key, value)
      state.set(key, { version: res.version, value })
    }
    for (const k of keys) await put(k, `first ${k}`)
    clock.now += 1000
    for (let i = 0; i < keys.length; i += 3) await put(keys[i]!, `second ${keys[i]}`)
    clock.now += 30_000
    for (let i = 1; i < keys.length; i += 3) await put(keys[i]!, `third ${keys[i]}`)
    const point = db.namespaceVersion('w')
    const atPoint = new Map(state)

    let aged = false
    /** Between pages: deletes and puts of keys new to the window, and of keys it holds. */
    const writeBetween = async (page: number) => {
      for (let j = 0; j < 5; j++) {
        const k = keys[Math.floor(r() * keys.length)]!
        if (r() < 0.5) await db.delete('w', k)
        else await db.put('w', k, `later ${page}`)
      }
      // Keys no one had at the point, on both sides of where the walk is.
      await db.put('w', `k/${String(Math.floor(r() * 3000)).padStart(5, '0')}+new`, 'new')
      // Once, the first rewrites leave the window: their keys leave its list.
      if (page === 4 && !aged) {
        aged = true
        clock.now += 40_000
      }
    }
    const walk = async (o: {
      prefix?: string
      start?: string
      end?: string
      reverse?: boolean
    }) => {
      const got: string[] = []
      let after: string | undefined
      for (let page = 0; page < 1000; page++) {
        const res = await db.listAt(
          'w',
          { ...o, after, limit: 97, values: true },
          { version: point },
        )
        for (const e of res.entries) got.push(`${e.key} ${e.version} ${e.value}`)
        if (res.next === undefined) break
        after = res.next
        await writeBetween(page)
      }
      const want = [...atPoint]
        .filter(
          ([k]) =>
            k.startsWith(o.prefix ?? '') &&
            (o.start === undefined || compareUtf8(k, o.start) >= 0) &&
            (o.end === undefined || compareUtf8(k, o.end) < 0),
        )
        .sort(([a], [b]) => (o.reverse ? compareUtf8(b, a) : compareUtf8(a, b)))
        .map(([k, s]) => `${k} ${s.version} ${s.value}`)
      t.equal(got.length, want.length, `${JSON.stringify(o)}: as many entries as at the point`)
      t.same(got, want, `${JSON.stringify(o)}: the entries at the point, in order`)
    }
    const floor = db.historyFrom('w').version
    await walk({})
    t.ok(db.historyFrom('w').version > floor, 'records left the window during the walk')
    t.ok(db.historyFrom('w').version < point, 'the point is still inside the window')
    await walk({ reverse: true })
    await walk({ prefix: 'k/01', reverse: true })
    await walk({ start: 'k/00500', end: 'k/02500' })
    await walk({ prefix: 'k/02', start: 'k/02100', end: 'k/028', reverse: true })
  },
)

t.test('points that cannot be read are refused with their own codes', async (t) => {
  const clock = clockAt(1_700_000_000_000)
  const db = await open(tempDir(t, 'window-points'), { clock: clock.fn, durability: 'none' })
  t.teardown(() => db.close())
  await db.createNamespace('h')
  await db.createNamespace('plain')
  db.setHistory('h', { seconds: 60, bytes: 1 << 20 })
  await db.put('h', 'k', 1)
  clock.now += 5
  await db.put('h', 'k', 2)
  t.equal(
    await errorCode(() => db.getAt('h', 'k', { at: clock.now + 1 })),
    'INVALID_POINT',
    'a time to come',
  )
  t.equal(
    await errorCode(() => db.getAt('h', 'k', { version: 3 })),
    'INVALID_POINT',
    'a version above the namespace',
  )
  for (const p of [{ version: -1 }, { version: 1.5 }, { at: Number.NaN }, {}, null, 7])
    t.equal(
      await errorCode(() => db.getAt('h', 'k', p as never)),
      'INVALID_POINT',
      `malformed ${JSON.stringify(p)}`,
    )
  t.equal(await errorCode(db.listAt('h', {}, { version: 9 })), 'INVALID_POINT')
  t.equal(
    await errorCode(db.listAt('h', { start: 'b', end: 'a' }, { version: 1 })),
    'INVALID_ARGUMENT',
  )
  t.equal(await errorCode(() => db.getAt('none', 'k', { version: 0 })), 'NAMESPACE_NOT_FOUND')
  t.equal(await errorCode(() => db.setHistory('h', { seconds: -1, bytes: 1 })), 'INVALID_ARGUMENT')
  t.equal(await errorCode(() => db.setHistory('h', { seconds: 1.5, bytes: 1 })), 'INVALID_ARGUMENT')
  t.same(db.getAt('h', 'k', { version: 1 }), { value: 1, version: 1 })
  // Without a window only the present is readable.
  await db.put('plain', 'k', 1)
  clock.now += 5
  await db.put('plain', 'k', 2)
  t.same(db.getAt('plain', 'k', { version: 2 }), { value: 2, version: 2 })
  t.same(db.getAt('plain', 'k', { at: clock.now }), { value: 2, version: 2 })
  t.equal(await errorCode(() => db.getAt('plain', 'k', { version: 1 })), 'HISTORY_EXPIRED')
  t.equal(await errorCode(() => db.getAt('plain', 'k', { at: clock.now - 10 })), 'HISTORY_EXPIRED')
  t.same(db.history('plain', 'k'), [{ version: 2, at: clock.now, value: 2 }])
})

t.test('a directory without history opens, and starts keeping it when asked', async (t) => {
  const dir = tempDir(t, 'window-old')
  const clock = clockAt(1_700_000_000_000)
  let db = await open(dir, { clock: clock.fn })
  await db.createNamespace('h')
  for (let i = 0; i < 50; i++) await db.put('h', `k${i % 5}`, i)
  await db.compact()
  await db.close()
  t.notOk(
    fs.readdirSync(dir).some((f) => f === 'WINDOWS' || f.endsWith('.win')),
    'nothing of history is written until a window is set',
  )
  db = await open(dir, { clock: clock.fn })
  t.same(db.getAt('h', 'k4', { version: 50 }), { value: 49, version: 50 })
  t.equal(db.getHistory('h'), undefined)
  clock.now += 1000
  db.setHistory('h', { seconds: 60, bytes: 1 << 20 })
  t.same(db.historyFrom('h'), { version: 50, at: clock.now }, 'history begins at the window')
  clock.now += 1000
  await db.put('h', 'k4', 'new')
  t.same(db.getAt('h', 'k4', { version: 50 }), { value: 49, version: 50 })
  t.same(db.getAt('h', 'k4', { at: clock.now - 1 }), { value: 49, version: 50 })
  t.same(
    db.history('h', 'k4').map((h) => [h.version, h.value]),
    [
      [51, 'new'],
      [50, 49],
    ],
  )
  await db.close()
  db = await open(dir, { clock: clock.fn })
  t.teardown(() => db.close())
  t.same(
    db.getAt('h', 'k4', { version: 50 }),
    { value: 49, version: 50 },
    'and keeps it across an open',
  )
  // Turned off, it forgets; a dropped namespace takes its window with it.
  db.setHistory('h', { seconds: 0, bytes: 0 })
  t.equal(await errorCode(() => db.getAt('h', 'k4', { version: 50 })), 'HISTORY_EXPIRED')
  t.notOk(fs.existsSync(path.join(dir, 'window-00000001.win')))
  db.setHistory('h', { seconds: 60, bytes: 1 << 20 })
  t.ok(fs.existsSync(path.join(dir, 'window-00000001.win')))
  await db.dropNamespace('h')
  t.notOk(fs.existsSync(path.join(dir, 'window-00000001.win')))
})

t.test('values keep their bytes, and metadata held in them, version by version', async (t) => {
  const clock = clockAt(1_700_000_000_000)
  const db = await open(tempDir(t, 'window-raw'), { clock: clock.fn, durability: 'none' })
  t.teardown(() => db.close())
  await db.createNamespace('h')
  db.setHistory('h', { seconds: 60, bytes: 1 << 20 })
  const meta = (m: string, v: string) => {
    const mb = Buffer.from(m)
    const head = Buffer.alloc(5)
    head.writeUInt32LE(mb.length, 1)
    return Buffer.concat([head, mb, Buffer.from(v)])
  }
  const versions = [meta('{"a":1}', '"one"'), Buffer.from('"two"'), meta('{"b":2}', '{"x":3}')]
  for (const v of versions) {
    clock.now += 1
    await db.put('h', 'k', v)
  }
  for (let i = 0; i < versions.length; i++)
    t.ok(
      (db.getAt('h', 'k', { version: i + 1 })!.value as Buffer).equals(versions[i]!),
      `version ${i + 1}`,
    )
  const h = db.history('h', 'k')
  t.same(
    h.map((x) => (x.value as Buffer).toString('hex')),
    versions.map((v) => v.toString('hex')).reverse(),
  )
})
