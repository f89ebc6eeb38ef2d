// After an open from a checkpoint a namespace's keys stay as the checkpoint held them, and the
// keys written since live beside them (engine/base-keys.ts). Every read must see the two as
// one: gets, listings in both directions with prefixes and cursors, counts, expiry, the next
// checkpoint and the open after it. A model (a Map) is the judge, under random writes.
import fs from 'node:fs'
import path from 'node:path'
import t, { type Test } from 'tap'
import { type Db, open } from '../../engine/index.js'
import {
  compareUtf8,
  crashCopy,
  errorCode,
  putNumbered,
  rng,
  seedFromEnv,
  sleep,
  tempDir,
} from './helpers.js'

const openedFrom = (db: Db) => (db as unknown as { openedFrom: string }).openedFrom
const seed = seedFromEnv('BASE_KEYS_SEED')
const random = rng(seed)
const pick = <T>(xs: T[]) => xs[Math.floor(random() * xs.length)]!

// Keys in groups (so prefixes select runs), with some whose UTF-16 and UTF-8 orders differ and
// some that JSON must escape.
const ODD = ['\u{1F600}', '\uE000', '\uFFFD', 'é', '日本', 'z', '', '"q', '\\', '\t']
const keyOf = (i: number) => `${'abcd'[i % 4]}${String(i % 37).padStart(2, '0')}/${pick(ODD)}${i}`
const PREFIXES = ['', 'a', 'b0', 'c1', 'd3', 'a0', 'b1', 'z', 'c', 'd']

/** Every listing of the model's keys that the database must give the same way. */
async function compare(t: Test, db: Db, model: Map<string, unknown>, label: string) {
  const all = [...model.keys()].sort(compareUtf8)
  let bad = 0
  let jsonPages = 0
  const same = (got: string[], want: string[], what: string) => {
    if (JSON.stringify(got) === JSON.stringify(want)) return
    if (bad++ < 3) t.same(got, want, `${label}: ${what}`)
  }
  // Page by page: a slow machine writes more keys while a checkpoint runs than one page holds.
  const every = async (reverse: boolean) => {
    const keys: string[] = []
    let after: string | undefined
    for (;;) {
      const page = await db.list('n', { limit: 50_000, reverse, after })
      keys.push(...page.keys)
      if (page.next === undefined) return keys
      after = page.next
    }
  }
  same(await every(false), all, 'every key in order')
  same(await every(true), [...all].reverse(), 'every key in reverse')
  for (let q = 0; q < 40; q++) {
    const prefix = pick(PREFIXES)
    const reverse = random() < 0.4
    const limit = 1 + Math.floor(random() * 20)
    const after = random() < 0.5 ? pick(all.length > 0 ? all : ['m']) : undefined
    let want = all.filter((k) => k.startsWith(prefix))
    if (reverse) want.reverse()
    if (after !== undefined)
      want = want.filter((k) => (reverse ? compareUtf8(k, after) < 0 : compareUtf8(k, after) > 0))
    const page = await db.list('n', { prefix, limit, after, reverse })
    same(page.keys, want.slice(0, limit), `prefix ${JSON.stringify(prefix)} after ${after}`)
    if (want.length > limit) t.equal(page.next, want[limit - 1], `${label}: next`)
    else if (page.next !== undefined) t.fail(`${label}: a next with nothing after it`)
    // The same page as JSON text: byte for byte what JSON.stringify makes of the keys.
    const asJson = await db.list('n', { prefix, limit, after, reverse, json: true })
    if (asJson.json !== undefined) {
      jsonPages++
      if (asJson.keys.length > 0) t.fail(`${label}: keys beside their JSON text`)
    }
    const text = asJson.json?.toString('utf8') ?? JSON.stringify(asJson.keys)
    const wanted = JSON.stringify(want.slice(0, limit))
    if (text !== wanted && bad++ < 3) t.equal(text, wanted, `${label}: as JSON, prefix ${prefix}`)
    if (asJson.next !== page.next) t.equal(asJson.next, page.next, `${label}: next, as JSON`)
  }
  for (let q = 0; q < 50; q++) {
    const k = random() < 0.8 && all.length > 0 ? pick(all) : keyOf(Math.floor(random() * 5000))
    const got = (await db.get('n', k))?.value
    if (got !== model.get(k) && bad++ < 3) t.equal(got, model.get(k), `${label}: get ${k}`)
  }
  const info = db.namespaces().find((x) => x.name === 'n')!
  t.equal(info.keys, model.size, `${label}: the key count`)
  t.equal(bad, 0, `${label}: every read agrees with the model`)
  return jsonPages
}

t.test(
  'a namespace opened from a checkpoint reads as one with the keys written since',
  async (t) => {
    t.comment(`seed ${seed} (BASE_KEYS_SEED to repeat)`)
    const dir = tempDir(t, 'base-keys')
    const options = { durability: 'none' as const, checkpointBytes: 0 }
    let db = await open(dir, options)
    t.teardown(() => db.close())
    await db.createNamespace('n')
    const model = new Map<string, unknown>()
    for (let i = 0; i < 3000; i++) {
      const k = keyOf(i)
      await db.put('n', k, i)
      model.set(k, i)
    }
    for (let round = 0; round < 3; round++) {
      await db.close()
      db = await open(dir, options)
      t.equal(openedFrom(db), 'checkpoint', `round ${round}: opened from the checkpoint`)
      t.ok(db.listNow('n', { limit: 1 }), 'listings answer at once, with nothing to build')
      const copied = await compare(t, db, model, `round ${round}, as opened`)
      t.ok(copied > 0, `round ${round}: ${copied} pages as opened were copied as JSON text`)
      // Writes of every kind, over keys of the checkpoint and new ones alike.
      const known = [...model.keys()]
      for (let w = 0; w < 1500; w++) {
        const r = random()
        const k = r < 0.5 && known.length > 0 ? pick(known) : keyOf(Math.floor(random() * 5000))
        if (r < 0.2) {
          await db.delete('n', k)
          model.delete(k)
        } else if (r < 0.25) {
          // Removed, then written anew: it now lives among the new keys.
          await db.delete('n', k)
          await db.put('n', k, `anew ${w}`)
          model.set(k, `anew ${w}`)
        } else {
          await db.put('n', k, `w${round}.${w}`)
          model.set(k, `w${round}.${w}`)
        }
      }
      await compare(t, db, model, `round ${round}, after writes`)
      if (round === 1) {
        // A mid-way checkpoint walks both parts too; the next open must come from it.
        t.ok(await db.checkpoint(), 'a checkpoint of both parts')
        fs.rmSync(path.join(dir, 'CHECKPOINT.tmp'), { force: true })
      }
    }
  },
)

t.test('expiry passes over keys of the checkpoint and new ones alike', async (t) => {
  const dir = tempDir(t, 'base-keys-ttl')
  // The engine's clock stands still while the keys are written and is moved past their
  // expiry after: a busy machine cannot make a key expire before it is counted.
  let now = Date.now()
  const options = { checkpointBytes: 0, clock: () => now }
  let db = await open(dir, options)
  t.teardown(() => db.close())
  await db.createNamespace('n')
  for (let i = 0; i < 200; i++)
    await db.put('n', `k${String(i).padStart(3, '0')}`, i, i % 3 === 0 ? { ttlMs: 400 } : {})
  await db.close()
  db = await open(dir, options)
  t.equal(openedFrom(db), 'checkpoint')
  for (let i = 200; i < 260; i++)
    await db.put('n', `k${String(i).padStart(3, '0')}`, i, i % 3 === 0 ? { ttlMs: 400 } : {})
  t.equal((await db.list('n', { limit: 1000 })).keys.length, 260, 'all there before expiry')
  now += 500
  const left = (await db.list('n', { limit: 1000 })).keys
  const want = Array.from({ length: 260 }, (_, i) => i)
    .filter((i) => i % 3 !== 0)
    .map((i) => `k${String(i).padStart(3, '0')}`)
  t.same(left, want, 'a listing passes over expired keys of both parts')
  t.same(
    (await db.list('n', { limit: 1000, reverse: true })).keys,
    [...want].reverse(),
    'in reverse too',
  )
  // Small budgets: the sweep goes on across calls, from the base into the sorted list.
  for (let i = 0; i < 40; i++) db.sweepExpired(7)
  t.equal(db.namespaces()[0]!.keys, want.length, 'the sweep removes them from both parts')
  await db.close()
  db = await open(dir, options)
  t.same((await db.list('n', { limit: 1000 })).keys, want, 'and they stay gone after reopen')
})

t.test('a large base answers lookups while its hash table is made, and after', async (t) => {
  const dir = tempDir(t, 'base-keys-large')
  const options = { durability: 'none' as const, checkpointBytes: 0 }
  let db = await open(dir, options)
  t.teardown(() => db.close())
  await db.createNamespace('n')
  const n = 70_000 // over the size hashed while opening
  const key = (i: number) => `u${String(i).padStart(6, '0')}`
  await putNumbered(db, 'n', n, key, 5000)
  await db.close()
  db = await open(dir, options)
  t.equal(openedFrom(db), 'checkpoint')
  const check = async (label: string, gone: Set<number>) => {
    let bad = 0
    for (let i = 0; i < n; i += 97) {
      const want = gone.has(i) ? undefined : i === 194 ? 'again' : i
      if ((await db.get('n', key(i)))?.value !== want) bad++
    }
    t.equal(await db.get('n', 'u9'), undefined, `${label}: a key it never held`)
    t.equal(bad, 0, `${label}: every lookup right`)
  }
  // At once: the table is made in slices after open returns.
  const gone = new Set([0, 97, n - 1 - ((n - 1) % 97)])
  for (const i of gone) t.equal(await db.delete('n', key(i)), true, `delete ${i}`)
  await db.put('n', key(194), 'again')
  await check('before the table', gone)
  await db.indexReady()
  await check('with the table', gone)
  t.equal(await db.delete('n', key(291)), true)
  gone.add(291)
  await check('a delete through the table', gone)
  t.equal(db.namespaces()[0]!.keys, n - gone.size)
})

t.test(
  'a checkpoint folds the keys written since open into a new base, with writes going on',
  async (t) => {
    const dir = tempDir(t, 'base-keys-fold')
    const options = { durability: 'none' as const, checkpointBytes: 0 }
    let db = await open(dir, options)
    t.teardown(() => db.close())
    await db.createNamespace('n')
    const parts = () => partsOf(db)
    const model = new Map<string, unknown>()
    for (let i = 0; i < 20_000; i += 1000)
      await db.batch(
        Array.from({ length: 1000 }, (_, j) => {
          const key = keyOf(i + j)
          model.set(key, i + j)
          return { type: 'put' as const, ns: 'n', key, value: i + j }
        }),
      )
    t.equal(parts().base, 0, 'no base before the first checkpoint')
    for (let round = 0; round < 3; round++) {
      // Writes of every kind while the walk and the fold run in slices.
      const done = db.checkpoint()
      let settled = false
      void done.then(() => {
        settled = true
      })
      let w = 0
      const known = [...model.keys()]
      while (!settled || w < 200) {
        const r = random()
        const k = r < 0.5 ? pick(known) : keyOf(20_000 + Math.floor(random() * 20_000))
        if (r < 0.2) {
          await db.delete('n', k)
          model.delete(k)
        } else if (r < 0.25) {
          await db.delete('n', k)
          await db.put('n', k, `anew ${round}.${w}`)
          model.set(k, `anew ${round}.${w}`)
        } else {
          await db.put('n', k, `f${round}.${w}`)
          model.set(k, `f${round}.${w}`)
        }
        w++
      }
      t.ok(await done, `round ${round}: the checkpoint was written (${w} writes during it)`)
      const { fresh, base } = parts()
      t.ok(base > 0 && fresh < base, `round ${round}: folded (${base} in the base, ${fresh} fresh)`)
      await compare(t, db, model, `round ${round}, after the fold`)
      // New keys again, enough for the next checkpoint to fold them too.
      for (let i = 0; i < 9000; i++) {
        const k = `new${round}/${pick(ODD)}${i}`
        await db.put('n', k, i)
        model.set(k, i)
      }
    }
    await db.close()
    db = await open(dir, options)
    await compare(t, db, model, 'reopened')
  },
)

interface KeyMapView {
  fresh: number
  base: { live: number } | null
}

/** Namespace `n`'s keys written since its base was made, and those its base holds. */
function partsOf(db: Db): { fresh: number; base: number } {
  const map = (
    db as unknown as { keydir: { byName: Map<string, { map: KeyMapView }> } }
  ).keydir.byName.get('n')!.map
  return { fresh: map.fresh, base: map.base?.live ?? 0 }
}

t.test('a lone surrogate is no key, prefix or cursor', async (t) => {
  const dir = tempDir(t, 'base-keys-lone')
  let db = await open(dir, { checkpointBytes: 0 })
  t.teardown(() => db.close())
  await db.createNamespace('n')
  await db.put('n', '\uFFFD', 'replacement')
  await db.put('n', '\u{1F600}', 'smile')
  t.equal(await errorCode(db.put('n', '\uD83D', 1)), 'INVALID_ARGUMENT', 'a put is refused')
  t.equal(await errorCode(db.put('n', 'a\uDE00', 1)), 'INVALID_ARGUMENT', 'a low half alone too')
  await db.close()
  db = await open(dir, { checkpointBytes: 0 })
  t.equal(openedFrom(db), 'checkpoint')
  // Encoded as UTF-8 it would be U+FFFD's bytes: it must not find that key.
  t.equal(await db.get('n', '\uD83D'), undefined, 'a get finds nothing')
  t.equal((await db.get('n', '\uFFFD'))?.value, 'replacement')
  t.equal(await errorCode(db.list('n', { prefix: '\uD83D' })), 'INVALID_ARGUMENT')
  t.equal(await errorCode(db.list('n', { after: '\uD83D' })), 'INVALID_ARGUMENT')
  t.same((await db.list('n')).keys, ['\uFFFD', '\u{1F600}'], 'the others list as before')
  t.equal(await errorCode(db.createNamespace('m\uD800')), 'INVALID_ARGUMENT', 'nor a namespace')
  t.equal(await errorCode(db.get(7 as unknown as string, 'k')), 'INVALID_ARGUMENT')
  t.same(
    db.namespaces().map((n) => n.name),
    ['n'],
    'none was made',
  )
})

t.test(
  'keys added behind a checkpoint walk over a base are left to replay, in order',
  async (t) => {
    const dir = tempDir(t, 'base-keys-behind')
    const options = { durability: 'none' as const, checkpointBytes: 0 }
    const db = await open(dir, options)
    t.teardown(() => db.close())
    await db.createNamespace('n')
    const model = new Map<string, unknown>()
    const add = async (count: number, key: (i: number) => string) => {
      await putNumbered(db, 'n', count, key)
      for (let i = 0; i < count; i++) model.set(key(i), i)
    }
    await add(80_000, (i) => `m/${String(i).padStart(5, '0')}`)
    t.ok(await db.checkpoint(), 'a first checkpoint folds them into a base')
    await add(12_000, (i) => `p/${String(i).padStart(5, '0')}`) // enough to fold again
    // While the next walk runs, keys sorting first and last: most land behind it.
    const done = db.checkpoint()
    let settled = false
    void done.then(() => {
      settled = true
    })
    for (let i = 0; !settled || i < 100; i++) {
      const k = `${i % 2 ? 'a' : 'z'}/${String(i).padStart(5, '0')}`
      await db.put('n', k, i)
      model.set(k, i)
    }
    t.ok(await done, 'the checkpoint was written, and folded')
    await compare(t, db, model, 'after the fold')
    // As a kill -9 leaves it: the open comes from that checkpoint, and replays the rest.
    await db.flush()
    const image = tempDir(t, 'base-keys-behind-image')
    crashCopy(dir, image)
    const again = await open(image, options)
    t.teardown(() => again.close())
    t.equal(openedFrom(again), 'checkpoint')
    await compare(t, again, model, 'opened from it')
  },
)

t.test('new keys are folded into a base as they come, with no checkpoint', async (t) => {
  const dir = tempDir(t, 'base-keys-fold-soon')
  // The default checkpointBytes (64 MiB): the log below grows by a sixth of that.
  const db = await open(dir, { durability: 'none' })
  t.teardown(() => db.close())
  await db.createNamespace('n')
  const value = 'v'.repeat(200)
  const key = (i: number) => `k/${String(i).padStart(6, '0')}`
  for (let b = 0; b < 40_000; b += 1000)
    await db.batch(
      Array.from({ length: 1000 }, (_, j) => ({
        type: 'put' as const,
        ns: 'n',
        key: key(b + j),
        value,
      })),
    )
  await db.indexReady()
  const { fresh, base } = partsOf(db)
  t.ok(fresh < 8192 && base + fresh === 40_000, `folded: ${base} in the base, ${fresh} fresh`)
  t.equal(db.checkpointStats().checkpoints, 0, 'without a checkpoint')
  t.equal((await db.get('n', key(12_345)))?.value, value, 'a key reads as written')
  t.same(
    (await db.list('n', { prefix: 'k/0399', limit: 3 })).keys,
    [key(39_900), key(39_901), key(39_902)],
    'and lists in order',
  )
})

t.test('an open by log replay folds its keys into a base, with writes going on', async (t) => {
  const dir = tempDir(t, 'base-keys-fold-replay')
  const options = { durability: 'none' as const, checkpointBytes: 0 }
  let db = await open(dir, options)
  t.teardown(() => db.close())
  await db.createNamespace('n')
  const model = new Map<string, unknown>()
  for (let i = 0; i < 60_000; i += 1000)
    await db.batch(
      Array.from({ length: 1000 }, (_, j) => {
        const key = keyOf(i + j)
        model.set(key, i + j)
        return { type: 'put' as const, ns: 'n', key, value: i + j }
      }),
    )
  await db.close()
  fs.rmSync(path.join(dir, 'CHECKPOINT'))
  db = await open(dir, options)
  t.equal(openedFrom(db), 'log')
  t.equal(partsOf(db).base, 0, 'every key a string as the replay leaves them')
  // Writes of every kind while the sorted list is built and the fold runs in slices.
  const ready = db.indexReady()
  let settled = false
  void ready.then(() => {
    settled = true
  })
  const known = [...model.keys()]
  let w = 0
  while (!settled || w < 200) {
    const r = random()
    const k = r < 0.5 ? pick(known) : keyOf(60_000 + Math.floor(random() * 20_000))
    if (r < 0.2) {
      await db.delete('n', k)
      model.delete(k)
    } else {
      await db.put('n', k, `r${w}`)
      model.set(k, `r${w}`)
    }
    w++
  }
  await ready
  const { fresh, base } = partsOf(db)
  t.ok(base > 0 && fresh < 8192, `folded (${base} in the base, ${fresh} fresh, ${w} writes)`)
  t.equal(db.checkpointStats().checkpoints, 0, 'without a checkpoint')
  await compare(t, db, model, 'after the fold')
  await db.close()
  db = await open(dir, options)
  await compare(t, db, model, 'reopened')
})

t.test(
  'after an open from a checkpoint, new keys fold without a checkpoint shorter than its log',
  async (t) => {
    const dir = tempDir(t, 'base-keys-fold-reopen')
    const options = { durability: 'none' as const }
    let db = await open(dir, options)
    t.teardown(() => db.close())
    await db.createNamespace('big')
    await db.createNamespace('n')
    await putNumbered(db, 'big', 150_000, (i) => `a-rather-long-key-of-the-big-namespace/${i}`)
    await db.close()
    db = await open(dir, options)
    t.equal(openedFrom(db), 'checkpoint')
    const loaded = fs.statSync(path.join(dir, 'CHECKPOINT')).size
    // New keys for the small namespace: past 4 MiB of log, but short of the checkpoint's size.
    const value = 'v'.repeat(300)
    let logged = 0
    for (let b = 0; logged < loaded * 0.6; b += 1000) {
      await db.batch(
        Array.from({ length: 1000 }, (_, j) => ({
          type: 'put' as const,
          ns: 'n',
          key: `k/${b + j}`,
          value,
        })),
      )
      logged += 1000 * 360
    }
    t.ok(logged > 4 * 1024 * 1024, `${logged} bytes logged, against a ${loaded}-byte checkpoint`)
    await sleep(200)
    const running = (db as unknown as { upkeep: { checkpointing: unknown } }).upkeep.checkpointing
    t.equal(running, null, 'no checkpoint started')
    t.equal(db.checkpointStats().checkpoints, 0, 'none written')
    await db.indexReady()
    const n = (
      db as unknown as { keydir: { byName: Map<string, { map: KeyMapView }> } }
    ).keydir.byName.get('n')!.map
    t.ok(n.base !== null && n.fresh < 8192, `the new keys folded alone (${n.fresh} fresh)`)
  },
)
