// Compaction reclaims dead space and never resurrects deleted keys or dropped namespaces.
import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import t, { type Test } from 'tap'
import { namespaceChanges, open } from '../../engine/index.js'
import { clearFaults, injectFault } from '../../engine/io.js'
import { crashCopy, dirBytes, errorCode, rng, seedFromEnv, tempDir } from './helpers.js'

t.test('after overwrites, deletes and drops, compact() shrinks the directory', async (t) => {
  const seed = seedFromEnv('CAIRN_SEED')
  t.comment(`seed ${seed} (set CAIRN_SEED to reproduce)`)
  const rand = rng(seed)
  const dir = tempDir(t, 'compact')
  const opts = { segmentBytes: 256 * 1024, durability: 'none' as const, autoCompact: false }
  let db = await open(dir, opts)
  await db.createNamespace('data')
  await db.createNamespace('doomed')
  const live = new Map<string, Buffer>()
  for (let round = 0; round < 5; round++) {
    for (let i = 0; i < 2000; i++) {
      const v = crypto.randomBytes(800 + Math.floor(rand() * 400))
      await db.put('data', `key-${i}`, v)
      live.set(`key-${i}`, v)
    }
  }
  for (let i = 0; i < 3000; i++) await db.put('doomed', `d${i}`, crypto.randomBytes(500))
  for (let i = 0; i < 2000; i += 2) {
    await db.delete('data', `key-${i}`)
    live.delete(`key-${i}`)
  }
  await db.dropNamespace('doomed')
  for (let i = 0; i < 200; i++) await db.put('data', 'hot', i) // keeps a record in the active segment
  live.set('hot', Buffer.from([]))
  const liveBytes = [...live].reduce((n, [k, v]) => n + Buffer.byteLength(k) + v.length, 0)
  const beforeBytes = dirBytes(dir)
  const compactionsBefore = db.stats().compactions
  await db.compact()
  // The recent changes the pass took out of the log are kept apart, within their window.
  const afterBytes = dirBytes(dir) - historyBytes(t, dir, 2 * 10_000)
  t.comment(`live ${liveBytes} B, dir before ${beforeBytes} B, after ${afterBytes} B`)
  t.ok(db.stats().compactions > compactionsBefore, 'stats count the compaction')
  t.ok(afterBytes < beforeBytes / 4, 'most dead space reclaimed')
  t.ok(
    afterBytes <= liveBytes * 1.5,
    `directory ${afterBytes} B is at most 1.5x live ${liveBytes} B`,
  )
  t.ok(db.stats().deadBytes <= db.stats().diskBytes * 0.34, 'dead bytes mostly gone')

  for (let reopen = 0; reopen < 2; reopen++) {
    await db.close()
    db = await open(dir, opts)
    t.equal(db.hasNamespace('doomed'), false, 'dropped namespace stays dropped')
    const keys = (await db.list('data', { limit: 5000 })).keys
    t.equal(keys.length, live.size, 'exactly the live keys')
    let bad = 0
    for (const [k, v] of live) {
      if (k === 'hot') continue
      const got = (await db.get('data', k))?.value
      if (!Buffer.isBuffer(got) || !got.equals(v)) bad++
    }
    t.equal(bad, 0, 'every live value intact')
    t.equal((await db.get('data', 'hot'))?.value, 199)
    t.equal(await db.get('data', 'key-0'), undefined, 'deleted key does not come back')
    await db.compact()
  }
  await db.createNamespace('doomed')
  t.same((await db.list('doomed')).keys, [], 'a recreated namespace does not see old keys')
  await db.close()
  db = await open(dir, opts)
  t.same((await db.list('doomed')).keys, [], 'nor after reopen')
  await db.close()
})

t.test('a tombstone outlives the older copies of its key', async (t) => {
  const dir = tempDir(t, 'compact')
  const opts = { segmentBytes: 8 * 1024, durability: 'none' as const, autoCompact: false }
  let db = await open(dir, opts)
  await db.createNamespace('n')
  await db.put('n', 'victim', 'old')
  for (let i = 0; i < 300; i++) await db.put('n', `filler-${i % 30}`, 'f'.repeat(200))
  await db.delete('n', 'victim')
  for (let i = 0; i < 300; i++) await db.put('n', `filler-${i % 30}`, 'g'.repeat(200))
  for (let round = 0; round < 3; round++) {
    await db.compact()
    await db.close()
    db = await open(dir, opts)
    t.equal(await db.get('n', 'victim'), undefined, `deleted key stays deleted (round ${round})`)
    t.equal((await db.list('n')).keys.length, 30)
    for (let i = 0; i < 100; i++) await db.put('n', `filler-${i % 30}`, 'h'.repeat(200))
  }
  await db.close()
})

t.test('automatic compaction keeps the directory bounded under overwrites', async (t) => {
  const dir = tempDir(t, 'compact')
  const db = await open(dir, {
    segmentBytes: 64 * 1024,
    durability: 'none',
    compactionDeadRatio: 0.5,
    compactionMinDeadBytes: 256 * 1024,
  })
  t.teardown(() => db.close())
  await db.createNamespace('a')
  const value = Buffer.alloc(1000, 7)
  for (let i = 0; i < 20_000; i++) await db.put('a', `k${i % 100}`, value)
  await db.flush()
  // Passes run in slices between requests, slower on a busy machine: each pass is waited for
  // rather than a fixed time. The bound is generous: 100 live keys are ~100 KB.
  // The log, beside the last 10,000 changes kept for watches (at most 10.4 MB here).
  const logBytes = () => dirBytes(dir) - historyBytes(t, dir, 2 * 10_000)
  for (let i = 0; i < 300 && logBytes() > 2 * 1024 * 1024; i++) {
    await db.compactionSettled()
    await new Promise((r) => setTimeout(r, 100))
  }
  t.ok(logBytes() < 2 * 1024 * 1024, `20 MB written to 100 keys leaves ${logBytes()} B of log`)
  t.ok(db.stats().compactions > 0, 'compaction ran on its own')
  t.equal((await db.list('a')).keys.length, 100)
})

t.test('garbage left when writes stop is reclaimed without another write', async (t) => {
  const dir = tempDir(t, 'compact-quiet')
  const ratio = 0.2
  const min = 64 * 1024
  const db = await open(dir, {
    segmentBytes: 64 * 1024,
    durability: 'none',
    compactionDeadRatio: ratio,
    compactionMinDeadBytes: min,
  })
  t.teardown(() => db.close())
  await db.createNamespace('a')
  // Writes one after another, faster than passes catch up with: the last pass ends with
  // garbage written while it ran, and no write follows to start the next.
  const value = Buffer.alloc(500, 3)
  for (let i = 0; i < 20_000; i++) await db.put('a', `k${i % 200}`, value)
  await db.flush()
  const due = () => {
    const s = db.stats()
    return s.deadBytes >= min && s.deadBytes > s.diskBytes * ratio
  }
  for (let i = 0; i < 100 && (due() || db.isCompacting()); i++)
    await new Promise((r) => setTimeout(r, 50))
  const s = db.stats()
  t.notOk(due(), `garbage is under the trigger once quiet (${s.deadBytes} of ${s.diskBytes} B)`)
  t.ok(s.compactions > 0, 'passes ran')
  t.equal((await db.list('a')).keys.length, 200)
})

t.test('passes that can only rewrite tombstones they must keep do not go round', async (t) => {
  const dir = tempDir(t, 'compact-tombs')
  const db = await open(dir, {
    segmentBytes: 64 * 1024,
    durability: 'none',
    compactionMinDeadBytes: 64 * 1024,
  })
  t.teardown(() => db.close())
  await db.createNamespace('a')
  // Each segment: mostly large live values, and some small entries under long keys that
  // are then deleted. Their tombstones outweigh the trigger, but every segment still holding
  // an older copy is too live to be chosen, so a pass can only rewrite them.
  const long = 'x'.repeat(180)
  for (let i = 0; i < 1500; i++) {
    await db.put('a', `live/${i}`, Buffer.alloc(1000, 1))
    if (i % 3 < 2) await db.put('a', `dead/${long}/${i}`, 1)
  }
  await db.flush()
  db.rotate()
  for (let i = 0; i < 1500; i++) if (i % 3 < 2) await db.delete('a', `dead/${long}/${i}`)
  // And some garbage a pass does free, so that the first pass frees space.
  for (let round = 0; round < 3; round++)
    for (let i = 0; i < 50; i++) await db.put('a', `churn/${i}`, Buffer.alloc(1000, 2))
  await db.flush()
  for (let i = 0; i < 100 && db.isCompacting(); i++) await new Promise((r) => setTimeout(r, 20))
  // A pass that takes an empty segment (a header and nothing else) along with them.
  db.rotate()
  await db.compact({ full: false })
  // Passes that follow it (bounded: a loop of them never ends).
  for (let i = 0; i < 100 && db.isCompacting(); i++) await new Promise((r) => setTimeout(r, 20))
  const quiet = db.stats().compactions
  await new Promise((r) => setTimeout(r, 1000))
  const s = db.stats()
  t.equal(s.compactions, quiet, `no pass in a quiet second (${quiet} before it)`)
  // Nor after lone writes, each of which lets the log go idle (which starts a pass when
  // garbage is due), while the garbage does not grow.
  for (let i = 0; i < 10; i++) {
    await db.put('a', `lone/${i}`, 1)
    await new Promise((r) => setTimeout(r, 30))
  }
  t.equal(db.stats().compactions, quiet, 'nor after ten lone writes')
  t.ok(s.deadBytes > s.diskBytes * 0.2, 'the tombstones are still there, over the trigger')
  t.equal((await db.list('a', { prefix: 'dead/' })).keys.length, 0)
})

t.test('a pass that fails after its manifest write leaves no replaced segment alive', async (t) => {
  const dir = tempDir(t, 'compact-marker')
  t.teardown(clearFaults)
  const opts = { segmentBytes: 16 * 1024, durability: 'none' as const, autoCompact: false }
  const db = await open(dir, opts)
  t.teardown(() => db.close())
  await db.createNamespace('a')
  for (let i = 0; i < 60; i++) await db.put('a', `keep/${i}`, 'v'.repeat(500))
  // The manifest naming the outputs is written; the list of files to delete is not, and
  // the replaced segments, which hold keep/7's value, stay on disk.
  injectFault({ op: 'open', code: 'ENOSPC', path: /COMPACTED/, times: 1 })
  t.equal(
    await errorCode(db.compact()),
    'NO_SPACE',
    'the pass fails, as the engine says a full disk',
  )
  clearFaults()
  // keep/7 is deleted, and the next pass drops its tombstone: no segment it knows of holds
  // an older copy.
  await db.delete('a', 'keep/7')
  for (let i = 0; i < 60; i++) await db.put('a', `churn/${i % 10}`, 'w'.repeat(500))
  await db.compact()
  const copy = tempDir(t, 'compact-marker-crash')
  crashCopy(dir, copy)
  const again = await open(copy, opts)
  t.teardown(() => again.close())
  t.equal(await again.get('a', 'keep/7'), undefined, 'the deleted key stays deleted')
  t.equal((await again.list('a', { prefix: 'keep/' })).keys.length, 59, 'the others are there')
})

/** The directory's history files (FORMAT.md, "History files"). */
const historyFiles = (dir: string) =>
  fs.readdirSync(dir).filter((n) => /^history-\d+\.hst$/.test(n))

/**
 * The size of the directory's history files (0 without any), failing the test when one holds
 * more than `most` entries, or entries of another namespace than it is named for.
 */
function historyBytes(t: Test, dir: string, most: number): number {
  let total = 0
  for (const name of historyFiles(dir)) {
    const buf = fs.readFileSync(path.join(dir, name))
    const own = Number(/\d+/.exec(name)![0])
    let entries = 0
    for (let p = 32; p + 12 <= buf.length; ) {
      const length = buf.readUInt32LE(p + 4)
      const nsId = buf.readUInt32LE(p + 12 + 8)
      if (nsId !== own) t.fail(`${name} holds an entry of namespace ${nsId}`)
      entries++
      p += 12 + length
    }
    if (entries > most) t.fail(`${name} holds ${entries} entries`)
    total += buf.length
  }
  return total
}

t.test(
  'after compaction and a reopen, each namespace gives back its last 10,000 changes',
  async (t) => {
    const dir = tempDir(t, 'compact-history')
    const opts = { segmentBytes: 64 * 1024, durability: 'none' as const, autoCompact: false }
    let db = await open(dir, opts)
    await db.createNamespace('few')
    await db.createNamespace('many')
    await db.createNamespace('gone')
    // Five changes, overwrites and a delete, and 12,000 changes to ten keys.
    for (let i = 1; i <= 4; i++) await db.put('few', 'k', i)
    await db.delete('few', 'k')
    for (let i = 1; i <= 12_000; i++) await db.put('many', `k${i % 10}`, i)
    await db.put('gone', 'x', 1)
    await db.dropNamespace('gone')
    await db.compact()
    await db.close()
    db = await open(dir, opts)
    t.teardown(() => db.close())
    const of = async (ns: string) => {
      const m = new Map<number, Awaited<ReturnType<typeof namespaceChanges>>['changes'][number]>()
      for (const c of (await namespaceChanges(db as never, ns, 0)).changes) m.set(c.version, c)
      return m
    }
    const few = await of('few')
    t.same(
      [1, 2, 3, 4, 5].map((v) => [few.get(v)?.type, few.get(v)?.value]),
      [
        ['put', 1],
        ['put', 2],
        ['put', 3],
        ['put', 4],
        ['delete', undefined],
      ],
      'every change of a small namespace, the overwritten ones and the delete',
    )
    const many = await of('many')
    let run = 0
    while (many.has(12_000 - run)) run++
    t.ok(run >= 10_000, `the last ${run} changes of the busy one, without a gap`)
    t.equal(many.get(12_000)?.value, 12_000)
    t.equal(many.get(2_001)?.value, 2_001, 'the 10,000th from the end as it was written')
    t.equal((await of('gone')).size, 0, 'nothing of a dropped namespace')
    // Appended to, a file holds up to about twice its window before it is rewritten.
    historyBytes(t, dir, 2 * 10_000)
  },
)

t.test('a history file the disk cannot read fails the pass, and loses nothing', async (t) => {
  t.teardown(clearFaults)
  const dir = tempDir(t, 'compact-history-read')
  const opts = { segmentBytes: 64 * 1024, durability: 'none' as const, autoCompact: false }
  let db = await open(dir, opts)
  await db.createNamespace('a')
  for (let i = 1; i <= 5; i++) await db.put('a', 'k', i)
  await db.compact()
  // A process reads a file once, before its first append to it (where its records end).
  await db.close()
  db = await open(dir, opts)
  for (let i = 6; i <= 8; i++) await db.put('a', 'k', i)
  injectFault({ op: 'read', code: 'EIO', path: /history-\d+\.hst$/ })
  t.equal(await errorCode(db.compact()), 'IO_ERROR', 'the pass fails')
  clearFaults()
  await db.compact()
  await db.close()
  db = await open(dir, opts)
  t.teardown(() => db.close())
  const got = (await namespaceChanges(db as never, 'a', 0)).changes
  t.same(
    got.map((c) => c.version).sort((x, y) => x - y),
    [1, 2, 3, 4, 5, 6, 7, 8],
    'every change, after the next pass and a reopen',
  )
  // A backup carries it too.
  const copy = tempDir(t, 'compact-history-backup')
  await db.backup(copy)
  const restored = await open(copy, opts)
  const again = (await namespaceChanges(restored as never, 'a', 0)).changes
  t.equal(again.length, 8, 'a backup resumes watches as well')
  await restored.close()
})

t.test('each namespace keeps its window in history files, however many are busy', async (t) => {
  const dir = tempDir(t, 'compact-history-total')
  const opts = { segmentBytes: 4 * 1024 * 1024, durability: 'none' as const, autoCompact: false }
  let db = await open(dir, opts)
  // Three namespaces whose windows come to about 108 MiB, more than one file held in all
  // before history files, overwriting a few keys; and one dropped.
  const value = Buffer.alloc(12 * 1024, 3)
  for (const ns of ['x', 'y', 'z']) {
    await db.createNamespace(ns)
    for (let i = 1; i <= 3000; i++) await db.put(ns, `k${i % 4}`, value)
  }
  await db.createNamespace('gone')
  await db.put('gone', 'k', 1)
  await db.compact()
  await db.dropNamespace('gone')
  await db.put('x', 'one more', 1)
  await db.compact()
  t.equal(historyFiles(dir).length, 3, 'a file per namespace with history, none for a dropped one')
  t.ok(historyBytes(t, dir, 2 * 10_000) > 100 * 1024 * 1024, 'the windows, all of them')
  await db.close()
  db = await open(dir, opts)
  t.teardown(() => db.close())
  for (const ns of ['x', 'y', 'z']) {
    const got = (await namespaceChanges(db as never, ns, 0)).changes
    const versions = new Set(got.map((c) => c.version))
    let run = 0
    while (versions.has((ns === 'x' ? 3001 : 3000) - run)) run++
    t.equal(run, ns === 'x' ? 3001 : 3000, `${ns}: every change, without a gap`)
  }
})

t.test('a HISTORY from before history files is read, then moved into them', async (t) => {
  const dir = tempDir(t, 'compact-history-legacy')
  const opts = { segmentBytes: 64 * 1024, durability: 'none' as const, autoCompact: false }
  let db = await open(dir, opts)
  for (const ns of ['a', 'b']) {
    await db.createNamespace(ns)
    for (let i = 1; i <= 500; i++) await db.put(ns, `k${i % 3}`, i)
  }
  await db.compact()
  await db.close()
  // The single file engines wrote before: the same header, every namespace's records.
  const files = historyFiles(dir)
  t.equal(files.length, 2)
  const bodies = files.map((n) => fs.readFileSync(path.join(dir, n)))
  fs.writeFileSync(
    path.join(dir, 'HISTORY'),
    Buffer.concat([bodies[0]!, ...bodies.slice(1).map((b) => b.subarray(32))]),
  )
  for (const n of files) fs.rmSync(path.join(dir, n))
  db = await open(dir, opts)
  t.teardown(() => db.close())
  const every = async (ns: string) =>
    (await namespaceChanges(db as never, ns, 0)).changes.map((c) => c.version).sort((x, y) => x - y)
  const all = Array.from({ length: 500 }, (_, i) => i + 1)
  t.same(await every('a'), all, 'read from HISTORY')
  await db.put('a', 'k0', 501)
  await db.compact()
  t.notOk(fs.existsSync(path.join(dir, 'HISTORY')), 'HISTORY is gone once a pass moved it')
  t.equal(historyFiles(dir).length, 2, 'into a file per namespace')
  t.same(await every('a'), [...all, 501], 'a: every change')
  t.same(await every('b'), all, 'b: every change')
})

t.test("a pass appends what it took to a namespace's file; a torn append is cut off", async (t) => {
  const dir = tempDir(t, 'compact-history-append')
  const opts = { segmentBytes: 64 * 1024, durability: 'none' as const, autoCompact: false }
  let db = await open(dir, opts)
  await db.createNamespace('a')
  for (let i = 1; i <= 3000; i++) await db.put('a', `k${i % 7}`, i)
  await db.compact()
  const [name] = historyFiles(dir)
  const file = path.join(dir, name!)
  const first = fs.statSync(file)
  for (let i = 3001; i <= 3010; i++) await db.put('a', `k${i % 7}`, i)
  await db.compact()
  const second = fs.statSync(file)
  t.equal(second.ino, first.ino, 'the same file, appended to')
  t.ok(
    second.size > first.size && second.size - first.size < 4096,
    `grown by the new entries alone (${second.size - first.size} B)`,
  )
  // A crash in the middle of an append: the file ends in part of a record.
  await db.close()
  fs.appendFileSync(file, Buffer.alloc(100, 7))
  db = await open(dir, opts)
  t.teardown(() => db.close())
  for (let i = 3011; i <= 3020; i++) await db.put('a', `k${i % 7}`, i)
  await db.compact()
  const got = (await namespaceChanges(db as never, 'a', 0)).changes.map((c) => c.version)
  const all = new Set(got)
  let run = 0
  while (all.has(3020 - run)) run++
  t.equal(run, 3020, 'every change, those appended after the torn part too')
})
