// The embedded feed keeps its rings' memory under its bound: many namespaces holding a
// little each are shed whole, least recently changed first, and a resume from a shed
// namespace reads the log instead.
import t from 'tap'
import { open } from '../../engine/index.js'
import { EmbeddedFeed } from '../../server/store/embedded-feed.js'
import { tempDir } from '../engine/helpers.js'

t.test('many small rings stay under the bound; a shed one is read back from the log', async (t) => {
  const db = await open(tempDir(t, 'feed-bound'), { durability: 'none' })
  t.teardown(() => db.close())
  const bound = 256 * 1024
  const feed = new EmbeddedFeed(db, bound)
  t.teardown(() => feed.close())
  const value = (i: number) => Buffer.from(JSON.stringify({ i }))
  for (let i = 0; i < 600; i++) {
    await db.createNamespace(`ns${i}`)
    await db.put(`ns${i}`, 'k', value(i))
  }
  t.ok(feed.held <= bound, `the rings hold ${feed.held} B, bound ${bound} B`)
  const last = await feed.read('ns599', 0, 10)
  t.same(
    last === 'expired' ? last : last.map((c) => c.value?.toString()),
    [value(599).toString()],
    'the newest namespace keeps its change',
  )
  // Shed long ago (the least recently changed goes first), it is read back from the log.
  const first = await feed.read('ns0', 0, 10)
  t.same(
    first === 'expired' ? first : first.map((c) => [c.key, c.value?.toString()]),
    [['k', value(0).toString()]],
    'the first namespace, shed, is read back from the log',
  )
  t.ok(feed.held <= bound, `still under the bound after reading back (${feed.held} B)`)
})
