// namespaceChanges reads one namespace's history back from the log: at least its newest
// 10,000 changes, and, however many more one segment holds, not many more in memory.
import t from 'tap'
import { namespaceChanges, open } from '../../engine/index.js'
import { countReads, tempDir } from './helpers.js'

t.test('a segment of 25,000 changes of one namespace gives back its newest window', async (t) => {
  const db = await open(tempDir(t, 'history'), { durability: 'none' })
  t.teardown(() => db.close())
  await db.createNamespace('a')
  await db.createNamespace('b')
  for (let i = 1; i <= 25_000; i++) {
    await db.put('a', `k${i % 10}`, Buffer.from(`${i}`))
    if (i % 100 === 0) await db.put('b', 'k', Buffer.from(`${i}`))
  }
  const got = (await namespaceChanges(db as never, 'a', 0)).changes
  const versions = new Set(got.map((c) => c.version))
  let run = 0
  while (versions.has(25_000 - run)) run++
  t.ok(run >= 10_000, `the newest ${run} changes, without a gap`)
  t.ok(got.length <= 12_500, `${got.length} changes held, at most a quarter more than the window`)
  t.equal(String(got.find((c) => c.version === 25_000)?.value), '25000')
  t.ok(
    got.every((c) => c.ns === 'a'),
    'only the namespace asked for',
  )
  const since = (await namespaceChanges(db as never, 'a', 24_990)).changes
  t.same(
    since.map((c) => c.version).sort((x, y) => x - y),
    [24_991, 24_992, 24_993, 24_994, 24_995, 24_996, 24_997, 24_998, 24_999, 25_000],
    'after a version: only what follows it',
  )
  t.same(
    (await namespaceChanges(db as never, 'none', 0)).changes,
    [],
    'nothing of a namespace not there',
  )
})

t.test('a segment opened from a checkpoint learns its namespaces once read whole', async (t) => {
  const dir = tempDir(t, 'history-learn')
  const opts = { durability: 'none' as const, segmentBytes: 64 * 1024, autoCompact: false }
  let db = await open(dir, opts)
  await db.createNamespace('quiet')
  await db.createNamespace('busy')
  await db.put('quiet', 'k', Buffer.from('"first"'))
  for (let i = 1; i <= 20_000; i++) await db.put('busy', `k${i}`, Buffer.from(`"${i}"`))
  await db.put('quiet', 'k', Buffer.from('"second"'))
  await db.close()
  db = await open(dir, opts)
  t.teardown(() => db.close())
  t.equal(
    (db as never as { openedFrom: string }).openedFrom,
    'checkpoint',
    'opened from its checkpoint',
  )
  const reads = countReads(t)
  const first = (await namespaceChanges(db as never, 'quiet', 0)).changes
  const firstBytes = reads.bytes()
  reads.reset()
  const again = (await namespaceChanges(db as never, 'quiet', 0)).changes
  t.same(
    again.map((c) => String(c.value)).sort(),
    first.map((c) => String(c.value)).sort(),
    'the same changes',
  )
  t.same(first.map((c) => String(c.value)).sort(), ['"first"', '"second"'])
  t.ok(
    reads.bytes() * 4 < firstBytes,
    `the second read passes over the segments without the namespace (${reads.bytes()} B read, then ${firstBytes} B)`,
  )
})
