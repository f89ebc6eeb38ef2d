// The index checkpoint: an open that uses it finds exactly what a full replay of the log
// finds, writes made after it are replayed, and a checkpoint that is damaged, stale or names
// segments that changed is ignored with the data intact. A "crash image" is a copy of the
// directory taken while the database is open: with durability `always` every acknowledged
// write is on disk, so the copy is what a kill -9 at that moment would leave.
import fs from 'node:fs'
import path from 'node:path'
import t, { type Test } from 'tap'
import { open } from '../../engine/index.js'
import type { Db } from '../../engine/index.js'
import { clearFaults, injectFault } from '../../engine/io.js'
import type { OpenOptions } from '../../engine/types.js'
import { crashIterations } from './crash-check.js'
import { putNumbered, tempDir } from './helpers.js'

const CKPT = 'CHECKPOINT'

const openedFrom = (db: Db) => (db as unknown as { openedFrom: string }).openedFrom

/** Everything a reader can see: namespaces with counts, keys both ways, values, versions, TTLs. */
async function snapshot(db: Db): Promise<string> {
  const out: unknown[] = []
  const nss = db.namespaces().sort((a, b) => (a.name < b.name ? -1 : 1))
  out.push(nss)
  for (const { name } of nss) {
    const keys = (await db.list(name, { limit: 1_000_000 })).keys
    const back = (await db.list(name, { limit: 1_000_000, reverse: true })).keys
    out.push(name, keys.length, JSON.stringify(back) === JSON.stringify([...keys].reverse()))
    for (const k of keys) out.push(k, await db.get(name, k), await db.stat(name, k))
  }
  return JSON.stringify(out)
}

/** The directory as a kill -9 would leave it now (LOCK aside: its process is "dead"). */
function crashImage(t: Test, dir: string): string {
  const to = tempDir(t, 'ckpt-image')
  for (const name of fs.readdirSync(dir)) {
    if (name === 'LOCK') continue
    fs.copyFileSync(path.join(dir, name), path.join(to, name))
  }
  return to
}

const key = (i: number) => `k${String(i).padStart(6, '0')}`
// Keys whose UTF-16 order differs from their UTF-8 order, and others beyond ASCII.
const ODD = ['\u{1F600}smile', '\uE000private', '\uFFFDreplacement', 'é-accent', '日本語', 'z']

async function fill(db: Db): Promise<void> {
  await db.createNamespace('big')
  await db.createNamespace('small')
  await db.createNamespace('gone')
  await db.createNamespace('ttl')
  const w: Promise<unknown>[] = []
  for (let i = 0; i < 60_000; i++) w.push(db.put('big', key(i), i % 3 ? `v${i}` : { i }))
  await Promise.all(w)
  for (let i = 0; i < 60_000; i += 7) await db.delete('big', key(i))
  for (let i = 0; i < 60_000; i += 11) await db.put('big', key(i), `again ${i}`)
  for (const k of ODD) await db.put('small', k, Buffer.from(k))
  await db.batch([
    { type: 'put', ns: 'small', key: 'b1', value: 1 },
    { type: 'put', ns: 'small', key: 'b1', value: 2 },
    { type: 'delete', ns: 'small', key: 'z' },
  ])
  for (let i = 0; i < 50; i++) await db.put('gone', `g${i}`, i)
  await db.dropNamespace('gone')
  await db.put('ttl', 'long', 'stays', { ttlMs: 3_600_000 })
  await db.put('ttl', 'short', 'expires', { ttlMs: 200 })
  await db.increment('small', 'counter', 5)
}

t.test(
  'open after a clean close uses the checkpoint and finds what a full replay finds',
  async (t) => {
    const dir = tempDir(t, 'ckpt')
    const options: OpenOptions = { durability: 'none', segmentBytes: 1024 * 1024 }
    let db = await open(dir, options)
    await fill(db)
    await db.close()
    t.ok(fs.existsSync(path.join(dir, CKPT)), 'close wrote a checkpoint')
    await new Promise((r) => setTimeout(r, 300)) // 'short' expires

    db = await open(dir, options)
    t.equal(openedFrom(db), 'checkpoint', 'the open used it')
    // Gets and writes work while the large namespace's keys move into its map.
    t.same((await db.get('big', key(1)))?.value, 'v1', 'a get before the sorted list is built')
    t.equal(await db.get('big', key(7)), undefined, 'a deleted key stays deleted')
    t.equal((await db.get('big', key(11)))?.value, 'again 11')
    const fromCkpt = await snapshot(db)
    t.equal((await db.get('ttl', 'short')) ?? null, null, 'an expired key is gone')
    t.notOk(db.hasNamespace('gone'), 'a dropped namespace stays dropped')
    await db.close()

    fs.rmSync(path.join(dir, CKPT))
    db = await open(dir, options)
    t.equal(openedFrom(db), 'log', 'without it, the log is replayed')
    t.equal(await snapshot(db), fromCkpt, 'same keys, values, versions, TTLs and counts')
    await db.close()
  },
)

t.test('writes during the build after open, and a checkpoint of them', async (t) => {
  const dir = tempDir(t, 'ckpt-build')
  const options: OpenOptions = { durability: 'none' }
  let db = await open(dir, options)
  await fill(db)
  await db.close()
  await new Promise((r) => setTimeout(r, 300)) // 'short' expires: counts then agree
  db = await open(dir, options)
  t.equal(openedFrom(db), 'checkpoint')
  // Before the first listing: the large namespace is still being moved into its map.
  await db.put('big', key(7), 'revived')
  await db.delete('big', key(1))
  await db.put('big', 'new-key', 1)
  t.equal((await db.get('big', key(7)))?.value, 'revived')
  t.equal(await db.get('big', key(1)), undefined)
  const keys = (await db.list('big', { prefix: 'k00000', limit: 100 })).keys
  t.ok(keys.includes(key(7)) && !keys.includes(key(1)), 'listing sees writes made during the build')
  t.ok((await db.list('big', { prefix: 'new' })).keys.includes('new-key'))
  const before = await snapshot(db)
  t.ok(await db.checkpoint(), 'a checkpoint is written on demand')
  await db.close()
  db = await open(dir, options)
  t.equal(openedFrom(db), 'checkpoint')
  t.equal(await snapshot(db), before)
  await db.close()
})

t.test('writes after the checkpoint are replayed from the log', async (t) => {
  const dir = tempDir(t, 'ckpt-tail')
  const options: OpenOptions = { segmentBytes: 16 * 1024, checkpointBytes: 0 }
  const db = await open(dir, options)
  await db.createNamespace('n')
  for (let i = 0; i < 300; i++) await db.put('n', key(i), `first ${i}`)
  t.ok(await db.checkpoint(), 'checkpoint written')
  // After it: overwrites, deletes, new keys, a new namespace, across several segments.
  for (let i = 0; i < 300; i += 2) await db.put('n', key(i), `second ${i}`)
  for (let i = 1; i < 300; i += 5) await db.delete('n', key(i))
  for (let i = 300; i < 400; i++) await db.put('n', key(i), `new ${i}`)
  await db.createNamespace('later')
  await db.put('later', 'x', 1)
  const image = crashImage(t, dir)
  const want = await snapshot(db)
  await db.close()

  const again = await open(image, options)
  t.equal(openedFrom(again), 'checkpoint', 'the crash image opens from the checkpoint')
  t.equal(await snapshot(again), want, 'with every write made after it')
  await again.close()
})

t.test('periodic checkpoints in the background', async (t) => {
  const dir = tempDir(t, 'ckpt-periodic')
  const options: OpenOptions = { segmentBytes: 32 * 1024, checkpointBytes: 64 * 1024 }
  const db = await open(dir, options)
  await db.createNamespace('n')
  for (let i = 0; i < 2000; i++) await db.put('n', key(i % 500), `value ${i} ${'x'.repeat(100)}`)
  const stats = () =>
    (db as unknown as { checkpointStats(): { checkpoints: number } }).checkpointStats()
  for (let i = 0; i < 50 && stats().checkpoints === 0; i++)
    await new Promise((r) => setTimeout(r, 20))
  t.ok(stats().checkpoints > 0, `${stats().checkpoints} written while writing`)
  for (let i = 0; i < 100; i++) await db.delete('n', key(i))
  const image = crashImage(t, dir)
  const want = await snapshot(db)
  await db.close()
  const again = await open(image, options)
  t.equal(openedFrom(again), 'checkpoint')
  t.equal(await snapshot(again), want)
  await again.close()
})

t.test('a checkpoint walked while keys come, go and split the index misses none', async (t) => {
  const dir = tempDir(t, 'ckpt-walk')
  const options: OpenOptions = { checkpointBytes: 0, autoCompact: false }
  const db = await open(dir, options)
  await db.createNamespace('n')
  const N = 60_000 // a walk of several slices
  await putNumbered(db, 'n', N, key)
  let done = false
  const written = db.checkpoint().finally(() => {
    done = true
  })
  // Meanwhile: new keys between old ones all over the range (index chunks fill and split),
  // deletes and overwrites.
  let batches = 0
  let x = 7
  while (!done) {
    const ops = []
    for (let j = 0; j < 120; j++) {
      x = (x * 7919 + 13) % N
      // Keys before all the others land in the first chunks, behind the walk, splitting
      // them again and again: every chunk after moves along.
      const k = j % 4 === 0 ? key(x) : j % 4 === 1 ? `${key(x)}+` : `a${x}.${j}`
      ops.push(
        j % 4 === 0
          ? { type: 'delete' as const, ns: 'n', key: k }
          : { type: 'put' as const, ns: 'n', key: k, value: j },
      )
    }
    await db.batch(ops)
    batches++
  }
  t.equal(await written, true, 'the checkpoint was written')
  t.ok(batches >= 3, `${batches} batches were written during the walk`)
  const image = crashImage(t, dir)
  const want = await snapshot(db)
  await db.close()
  const again = await open(image, options)
  t.equal(openedFrom(again), 'checkpoint')
  t.equal(await snapshot(again), want, 'the open from it holds exactly what the database held')
  await again.close()
})

/** A closed directory with a checkpoint, and what it holds. */
async function prepared(t: Test, options: OpenOptions) {
  const dir = tempDir(t, 'ckpt-bad')
  const db = await open(dir, options)
  await db.createNamespace('n')
  for (let i = 0; i < 500; i++) await db.put('n', key(i), `v${i}`)
  for (let i = 0; i < 500; i += 3) await db.delete('n', key(i))
  const want = await snapshot(db)
  await db.close()
  return { dir, want }
}

t.test('a damaged, cut short or unknown checkpoint is ignored', async (t) => {
  const options: OpenOptions = { segmentBytes: 8 * 1024 }
  const damage: [string, (f: string) => void][] = [
    [
      'a flipped byte',
      (f) => {
        const b = fs.readFileSync(f)
        b[Math.floor(b.length / 2)] ^= 0x40
        fs.writeFileSync(f, b)
      },
    ],
    ['cut short', (f) => fs.truncateSync(f, Math.floor(fs.statSync(f).size / 2))],
    ['empty', (f) => fs.writeFileSync(f, '')],
    [
      'a format version from the future',
      (f) => {
        const b = fs.readFileSync(f)
        b.writeUInt32LE(99, 8)
        fs.writeFileSync(f, b)
      },
    ],
  ]
  for (const [what, hurt] of damage) {
    const { dir, want } = await prepared(t, options)
    hurt(path.join(dir, CKPT))
    const db = await open(dir, options)
    t.equal(openedFrom(db), 'log', `${what}: the log is replayed`)
    t.equal(await snapshot(db), want, `${what}: the data is intact`)
    await db.close()
    const again = await open(dir, options)
    t.equal(openedFrom(again), 'checkpoint', `${what}: the close wrote a good one`)
    t.equal(await snapshot(again), want)
    await again.close()
  }
})

t.test('a checkpoint from before a compaction does not bring deleted keys back', async (t) => {
  const options: OpenOptions = { segmentBytes: 8 * 1024, checkpointBytes: 0, autoCompact: false }
  const { dir } = await prepared(t, options)
  const old = fs.readFileSync(path.join(dir, CKPT))
  const db = await open(dir, options)
  for (let i = 1; i < 500; i += 3) await db.delete('n', key(i))
  for (let i = 0; i < 200; i++) await db.put('n', key(i), `after ${i}`)
  await db.compact()
  // A crash now leaves the checkpoint from before the compaction.
  const image = crashImage(t, dir)
  fs.writeFileSync(path.join(image, CKPT), old)
  const want = await snapshot(db)
  await db.close()
  fs.writeFileSync(path.join(dir, CKPT), old)
  for (const d of [image, dir]) {
    const again = await open(d, options)
    t.equal(openedFrom(again), 'log', 'the stale checkpoint is ignored')
    t.equal(await snapshot(again), want, 'no deleted key is back, no write lost')
    t.notOk(fs.existsSync(path.join(d, CKPT)), 'and removed')
    await again.close()
  }
})

t.test('a checkpoint naming a segment that is gone or shorter is ignored', async (t) => {
  const options: OpenOptions = { segmentBytes: 1024 * 1024, checkpointBytes: 0 }
  const dir = tempDir(t, 'ckpt-seg')
  const db = await open(dir, options)
  await db.createNamespace('n')
  for (let i = 0; i < 100; i++) await db.put('n', key(i), `v${i}`)
  t.ok(await db.checkpoint())
  for (let i = 100; i < 150; i++) await db.put('n', key(i), `v${i}`)
  const image = crashImage(t, dir)
  await db.close()
  // The segment being written when the checkpoint was taken is not sealed, so the manifest
  // cannot vouch for it: cut it below what the checkpoint covers.
  const seg = fs
    .readdirSync(image)
    .filter((n) => n.endsWith('.seg'))
    .sort()
    .at(-1)!
  fs.truncateSync(path.join(image, seg), 2000)
  let again = await open(image, options)
  t.equal(openedFrom(again), 'log', 'a segment shorter than the checkpoint says: ignored')
  const left = (await again.list('n', { limit: 1000 })).keys
  t.ok(left.length < 150, `only what the cut left is there (${left.length} keys)`)
  for (const k of left)
    t.ok(await again.get('n', k), `${k} reads back, nothing points past the cut`)
  await again.close()

  // Without a manifest to miss it, a checkpoint that names a deleted segment is ignored.
  const image2 = tempDir(t, 'ckpt-seg2')
  fs.cpSync(dir, image2, { recursive: true })
  const db2 = await open(image2, options)
  await db2.put('n', 'extra', 1)
  await db2.close()
  const segs = fs
    .readdirSync(image2)
    .filter((n) => n.endsWith('.seg'))
    .sort()
  fs.rmSync(path.join(image2, segs[0]!))
  fs.rmSync(path.join(image2, 'MANIFEST'))
  again = await open(image2, options)
  t.equal(openedFrom(again), 'log', 'a missing segment: ignored')
  t.equal((await again.get('n', 'extra'))?.value, 1, 'the later segment is read')
  t.equal(await again.get('n', key(0)), undefined, 'the missing segment’s keys are not served')
  await again.close()
})

t.test('a failing disk fails the checkpoint, never a write', async (t) => {
  const options: OpenOptions = { segmentBytes: 8 * 1024, checkpointBytes: 0 }
  for (const op of ['open', 'write', 'fsync', 'rename'] as const) {
    const dir = tempDir(t, 'ckpt-fault')
    t.teardown(clearFaults)
    let db = await open(dir, options)
    await db.createNamespace('n')
    for (let i = 0; i < 200; i++) await db.put('n', key(i), `v${i}`)
    injectFault({ op, code: 'EIO', path: /CHECKPOINT/, times: Number.POSITIVE_INFINITY })
    t.equal(await db.checkpoint(), false, `${op}: the checkpoint is not written`)
    for (let i = 200; i < 300; i++) await db.put('n', key(i), `v${i}`)
    t.equal(db.health().state, 'ok', `${op}: health is untouched`)
    t.notOk(
      fs.readdirSync(dir).some((n) => n.startsWith(CKPT)),
      `${op}: nothing is left behind`,
    )
    const want = await snapshot(db)
    await db.close()
    clearFaults()
    db = await open(dir, options)
    t.equal(await snapshot(db), want, `${op}: every write is there`)
    await db.close()
  }
  // A checkpoint that cannot be read is as good as none.
  const dir = tempDir(t, 'ckpt-fault-read')
  let db = await open(dir, options)
  await db.createNamespace('n')
  await db.put('n', 'a', 1)
  await db.close()
  injectFault({ op: 'read', code: 'EIO', path: /CHECKPOINT/, times: Number.POSITIVE_INFINITY })
  injectFault({ op: 'unlink', code: 'EIO', path: /CHECKPOINT/, times: Number.POSITIVE_INFINITY })
  db = await open(dir, options)
  clearFaults()
  t.equal(openedFrom(db), 'log')
  t.equal((await db.get('n', 'a'))?.value, 1)
  await db.close()
})

t.test('repair ignores and removes the checkpoint', async (t) => {
  const options: OpenOptions = { segmentBytes: 8 * 1024 }
  const { dir, want } = await prepared(t, options)
  const db = await open(dir, { ...options, repair: true })
  t.notOk(fs.existsSync(path.join(dir, CKPT)))
  t.equal(await snapshot(db), want)
  await db.close()
})

t.test('kill -9 while checkpoints are written loses no acknowledged write', async (t) => {
  // The child writes checkpoints back to back while it writes: most kills land in one.
  const { rounds, fromCheckpoint } = await crashIterations(t, {
    mode: 'checkpoint',
    iterations: 20,
    budgetMs: 45_000,
    options: { segmentBytes: 32 * 1024, checkpointBytes: 0 },
  })
  t.ok(fromCheckpoint > 0, `reopens used a checkpoint (${fromCheckpoint} of ${rounds})`)
})
