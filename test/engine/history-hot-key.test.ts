// A hot key in a history window: one key overwritten many thousand times keeps every version
// it superseded, and those versions leave by the window's byte bound while other keys are
// written, oldest first, one commit's at a time. The key's history, its reads at a point and
// a reopen stay right throughout; a real engine in a real directory.
import t from 'tap'
import { open } from '../../engine/index.js'
import { errorCode, tempDir } from './helpers.js'

const HOT = 20_000

t.test('a hot key keeps its newest versions as the window sheds its oldest', async (t) => {
  const dir = tempDir(t, 'hot-key')
  const opts = { durability: 'none' as const, autoCompact: false }
  let db = await open(dir, opts)
  t.teardown(() => db.close())
  await db.createNamespace('h')
  db.setHistory('h', { seconds: 86_400, bytes: 1 << 20 })
  const versions: number[] = []
  for (let i = 0; i < HOT; i++) versions.push((await db.put('h', 'hot', i)).version)
  // The bound was reached long ago: the oldest versions of the key have left.
  const from = db.historyFrom('h')
  t.ok(from.version > versions[0]!, 'the oldest versions left by the byte bound')
  const page = db.history('h', 'hot', { limit: 100 })
  t.same(
    page.map((h) => [h.version, h.value]),
    Array.from({ length: 100 }, (_, i) => [versions[HOT - 1 - i], HOT - 1 - i]),
    'the newest 100 versions, newest first, the live one on top',
  )
  const older = db.history('h', 'hot', { limit: 3, before: versions[HOT - 500]! })
  t.same(
    older.map((h) => h.value),
    [HOT - 501, HOT - 502, HOT - 503],
    'a page before a version',
  )
  const mid = versions.findIndex((v) => v > from.version) + 10
  t.equal(db.getAt('h', 'hot', { version: versions[mid]! })?.value, mid, 'a read at a point')

  // Writes of other keys push the hot key's versions out, a commit at a time.
  const value = 'x'.repeat(96)
  for (let i = 0; i < 8000; i++) await db.put('h', `k${i % 500}`, value)
  const later = db.historyFrom('h')
  t.ok(later.version > versions[HOT - 1]!, 'every superseded hot version left')
  t.same(
    db.history('h', 'hot', { limit: 100 }).map((h) => h.value),
    [HOT - 1],
    'only the live version is left of the hot key',
  )
  t.equal(db.getAt('h', 'hot', { version: later.version })?.value, HOT - 1)
  t.equal(
    await errorCode(() => db.getAt('h', 'hot', { version: versions[HOT - 2]! })),
    'HISTORY_EXPIRED',
  )

  // Again, then a reopen, which loads the window from its file.
  for (let i = 0; i < 3000; i++) await db.put('h', 'hot', HOT + i)
  const kept = db.history('h', 'hot', { limit: 5 }).map((h) => h.value)
  await db.close()
  db = await open(dir, opts)
  t.same(
    db.history('h', 'hot', { limit: 5 }).map((h) => h.value),
    kept,
    'the same after a reopen',
  )
  t.same(kept, [HOT + 2999, HOT + 2998, HOT + 2997, HOT + 2996, HOT + 2995])
})
