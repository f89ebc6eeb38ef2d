// The contract's history is per namespace: a watch can resume from any of a namespace's last
// 10,000 changes however many other namespaces are busy. The feed's memory holds less than
// all of them together; what it shed is read back from the log, one namespace at a time,
// while the server runs and after a restart (and after compaction, from HISTORY).
import fs from 'node:fs'
import path from 'node:path'
import t, { type Test } from 'tap'
import { type Db, open } from '../../engine/index.js'
import { io } from '../../engine/io.js'
import { EmbeddedFeed } from '../../server/store/embedded-feed.js'
import type { Change } from '../../server/store/types.js'
import { countReads, tempDir } from '../engine/helpers.js'

const NAMESPACES = 8
const CHANGES = 300
/** The feed's memory bound: about a fifth of what the namespaces' histories come to. */
const BOUND = 512 * 1024
const value = (ns: number, i: number) =>
  Buffer.from(JSON.stringify({ ns, i, pad: 'x'.repeat(900) }))

/** Writes CHANGES changes to each namespace, taking turns, the last of each a delete. */
async function fill(db: Db): Promise<void> {
  for (let n = 0; n < NAMESPACES; n++) await db.createNamespace(`ns${n}`)
  for (let i = 1; i <= CHANGES; i++)
    for (let n = 0; n < NAMESPACES; n++) {
      if (i === CHANGES) await db.delete(`ns${n}`, `k${(i - 1) % 7}`)
      else await db.put(`ns${n}`, `k${i % 7}`, value(n, i))
    }
}

/**
 * A feed over a database that `write` filled, then compacted, closed and opened again: as
 * after a restart, its memory holds nothing and every resume reads the log.
 */
async function compactedAndReopened(
  t: Test,
  segmentBytes: number,
  write: (db: Db) => Promise<void>,
): Promise<EmbeddedFeed> {
  const dir = tempDir(t, 'feed-history-reopened')
  const opts = { durability: 'none' as const, segmentBytes, autoCompact: false }
  const first = await open(dir, opts)
  await write(first)
  await first.compact()
  await first.close()
  const db = await open(dir, opts)
  t.teardown(() => db.close())
  const feed = new EmbeddedFeed(db, BOUND)
  t.teardown(() => feed.close())
  return feed
}

/** Every change after `since`, read page by page as a resuming watch reads them. */
async function resume(feed: EmbeddedFeed, ns: string, since: number, page: number) {
  const all: Change[] = []
  for (let last = since; ; ) {
    const got = await feed.read(ns, last, page)
    if (got === 'expired') return 'expired'
    if (got.length === 0) return all
    all.push(...got)
    last = got[got.length - 1]!.version
  }
}

/** Holds the engine's file reads (its I/O module's) until `release`; `held` waits for one. */
function holdReads(t: Test) {
  const read = io.read
  t.teardown(() => {
    io.read = read
  })
  let release!: () => void
  const gate = new Promise<void>((resolve) => {
    release = resolve
  })
  let waiting = 0
  io.read = async (...args: Parameters<typeof read>) => {
    waiting++
    await gate
    return read.apply(io, args)
  }
  return {
    release,
    async held() {
      while (waiting === 0) await new Promise((resolve) => setTimeout(resolve, 5))
    },
  }
}

/**
 * Whether `got` is the namespace's whole history after version `since`, in order: the
 * changes fill wrote, then any written since, without a gap.
 */
function whole(t: Test, n: number, got: Change[] | 'expired', since: number): void {
  if (got === 'expired') {
    t.fail(`ns${n}: history expired`)
    return
  }
  t.same(
    got.map((c) => c.version),
    got.map((_, i) => since + 1 + i),
    `ns${n}: every change after ${since}, without a gap`,
  )
  t.ok(got.length >= CHANGES - since, `ns${n}: ${got.length} changes`)
  const bad = got.find(
    (c) =>
      (c.version < CHANGES && c.value?.toString() !== value(n, c.version).toString()) ||
      (c.version === CHANGES && c.type !== 'delete'),
  )
  t.equal(bad, undefined, `ns${n}: each change as it was written`)
}

t.test('every busy namespace resumes from its first change on a running server', async (t) => {
  const db = await open(tempDir(t, 'feed-history'), {
    durability: 'none',
    segmentBytes: 256 * 1024,
  })
  t.teardown(() => db.close())
  const feed = new EmbeddedFeed(db, BOUND)
  t.teardown(() => feed.close())
  await fill(db)
  t.ok(feed.held <= BOUND, `the rings hold ${feed.held} B, under the bound`)
  for (let n = 0; n < NAMESPACES; n++) {
    // Other namespaces change between the pages, so memory sheds while a watch catches up.
    const reading = resume(feed, `ns${n}`, 0, 50)
    for (let m = 0; m < NAMESPACES; m++) if (m !== n) await db.put(`ns${m}`, 'other', value(m, 0))
    whole(t, n, await reading, 0)
  }
  t.ok(feed.held <= BOUND * 1.1, `still about the bound (${feed.held} B)`)
})

t.test('after compaction and a restart, each namespace resumes from any version', async (t) => {
  const feed = await compactedAndReopened(t, 256 * 1024, fill)
  for (let n = 0; n < NAMESPACES; n++)
    whole(t, n, await resume(feed, `ns${n}`, n * 10, 1000), n * 10)
  // Back again to the first: read from the log a second time, as memory shed it meanwhile.
  whole(t, 0, await resume(feed, 'ns0', 0, 1000), 0)
})

t.test('a resume from before what the log holds is told the history expired', async (t) => {
  const feed = await compactedAndReopened(t, 64 * 1024, async (db) => {
    await db.createNamespace('busy')
    for (let i = 1; i <= 10_500; i++) await db.put('busy', `k${i % 5}`, Buffer.from(`"${i}"`))
  })
  const got = await resume(feed, 'busy', 100, 1000)
  t.equal(got, 'expired', 'from 10,400 changes back, compacted: expired')
  const recent = await resume(feed, 'busy', 10_500 - 10_000, 1000)
  t.equal(recent === 'expired' ? recent : recent.length, 10_000, 'the last 10,000 are there')
})

t.test('a namespace dropped and made again while its log is read', async (t) => {
  const db = await open(tempDir(t, 'feed-history-drop'), { durability: 'none' })
  t.teardown(() => db.close())
  await db.createNamespace('a')
  await db.createNamespace('c')
  for (let i = 1; i <= 50; i++) await db.put('a', 'k', Buffer.from(`"old-${i}"`))
  for (let i = 1; i <= 10; i++) await db.put('c', 'k', Buffer.from(`"c-${i}"`))
  // A feed started now holds nothing: as after a restart, a resume reads the log.
  const feed = new EmbeddedFeed(db, BOUND)
  t.teardown(() => feed.close())
  // The engine's file reads wait until the namespace has been dropped and made again.
  const gate = holdReads(t)
  const reading = feed.read('a', 0, 100)
  await gate.held()
  await db.dropNamespace('a')
  feed.dropped('a')
  await db.createNamespace('a')
  // Values the feed does not carry (the service's own records are such): the new namespace
  // moves on without a ring.
  for (let i = 1; i <= 30; i++) await db.put('a', 'k', i)
  gate.release()
  t.equal(await reading, 'expired', "the old namespace's changes are not given as the new one's")
  const c = await feed.read('c', 0, 100)
  t.same(
    c === 'expired' ? c : c.map((x) => x.value?.toString()),
    Array.from({ length: 10 }, (_, i) => `"c-${i + 1}"`),
    'and reads of the log go on for other namespaces',
  )
})

t.test('a namespace dropped while its log is read: other reads go on', async (t) => {
  const db = await open(tempDir(t, 'feed-history-gone'), { durability: 'none' })
  t.teardown(() => db.close())
  await db.createNamespace('a')
  await db.createNamespace('c')
  await db.put('a', 'k', Buffer.from('"a"'))
  await db.put('c', 'k', Buffer.from('"c"'))
  const feed = new EmbeddedFeed(db, BOUND)
  t.teardown(() => feed.close())
  const gate = holdReads(t)
  const reading = feed.read('a', 0, 100).then(
    (got) => got,
    (err: { code?: string }) => err.code,
  )
  await gate.held()
  await db.dropNamespace('a')
  feed.dropped('a')
  gate.release()
  t.equal(await reading, 'NAMESPACE_NOT_FOUND', 'the resume is told the namespace is gone')
  const c = await feed.read('c', 0, 100)
  t.same(
    c === 'expired' ? c : c.map((x) => x.value?.toString()),
    ['"c"'],
    'and the next read of the log, of another namespace, is answered',
  )
})

t.test('resumes that wait together share one read of the log', async (t) => {
  const dir = tempDir(t, 'feed-history-together')
  const opts = { durability: 'none' as const, segmentBytes: 256 * 1024 }
  const db = await open(dir, opts)
  t.teardown(() => db.close())
  await fill(db)
  // A feed started now holds nothing: as after a restart, every resume reads the log.
  const feed = new EmbeddedFeed(db, 64 * 1024 * 1024)
  t.teardown(() => feed.close())
  const reads = countReads(t)
  // Four: until a read has told how large histories are, a read serves as many whole windows
  // as fit in its budget (embedded-feed.ts, BATCH_BYTES), which is four.
  const TOGETHER = 4
  const all = await Promise.all(
    Array.from({ length: TOGETHER }, (_, n) => resume(feed, `ns${n}`, 0, 1000)),
  )
  for (const [n, got] of all.entries()) whole(t, n, got, 0)
  const log = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.seg'))
    .reduce((sum, f) => sum + fs.statSync(path.join(dir, f)).size, 0)
  t.ok(
    reads.bytes() < log * 1.5,
    `${reads.bytes()} B read for ${TOGETHER} resumes, of a log of ${log} B`,
  )
})

t.test('a change that cannot be read back does not stop the reads of the log', async (t) => {
  const db = await open(tempDir(t, 'feed-history-damaged'), { durability: 'none' })
  t.teardown(() => db.close())
  await db.createNamespace('bad')
  await db.createNamespace('c')
  // Bytes the embedded store never writes: a metadata mark without its length.
  await db.put('bad', 'k', Buffer.from([0]))
  await db.put('c', 'k', Buffer.from('"c"'))
  const feed = new EmbeddedFeed(db, BOUND)
  t.teardown(() => feed.close())
  const within = <T>(p: Promise<T>) =>
    Promise.race([
      p,
      new Promise<string>((resolve) => setTimeout(() => resolve('no answer'), 5000)),
    ])
  t.equal(
    await within(feed.read('bad', 0, 10)),
    'expired',
    'its resume is told the history expired',
  )
  const c = await within(feed.read('c', 0, 10))
  t.same(
    typeof c === 'string' ? c : c.map((x) => x.value?.toString()),
    ['"c"'],
    'and the next read of the log is answered',
  )
})
