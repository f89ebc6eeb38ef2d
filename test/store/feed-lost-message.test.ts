// A change whose sharded message never came (pub/sub delivers at most once; a front end of a
// version before the messages sends none) still reaches a live watch: the stream's poller
// finds its namespace past what it read on its 2 s tick and reads the stream (cluster/feed.ts).
// Here the changes are added to the stream by hand with no message, as such a writer would.
import t from 'tap'
import { feedKeysOf } from '../helpers/feed-stream.js'
import { serverOnCluster } from '../helpers/cluster-server.js'
import { watch } from '../server/contract/sse.js'

const on = await serverOnCluster(t)
if (on) {
  const { srv, made, api, redis } = on

  t.test('changes with no message reach a live watch within the tick', async (t) => {
    t.equal((await api.post('/namespaces', { name: 'quiet' })).status, 201)
    t.equal((await api.put('/quiet/a', { value: 1 })).status, 201)
    const keys = await feedKeysOf(redis, 'quiet')
    t.ok(keys, 'the feed stream is there')
    const { feed, meta: metaKey } = keys!

    const w = await watch(srv.baseUrl, '/quiet?watch=1', made.apiKey)
    t.teardown(() => w.close())
    await w.until(1)
    // Past the poller's start, so its first read does not pick them up.
    await new Promise((r) => setTimeout(r, 500))
    const added = Date.now()
    await redis
      .multi()
      .xadd(feed, '2-0', 't', 'p', 'k', 'b', 'v', '"second"')
      .xadd(feed, '3-0', 't', 'p', 'k', 'c', 'v', '"third"')
      .hset(metaKey, 'ver', '3')
      .exec()
    const got = (await w.until(3, 10_000)).slice(1).map((e) => [e.id, e.data.key])
    const ms = Date.now() - added
    t.same(
      got,
      [
        ['2', 'b'],
        ['3', 'c'],
      ],
      'both changes delivered, once, in order',
    )
    // The tick is 2 s; a busy machine may run it a little late.
    t.ok(ms < 5000, `within the tick (${ms} ms)`)
    // And a write with its message after them is delivered next, not again before.
    t.equal((await api.put('/quiet/d', { value: 4 })).status, 201)
    const next = (await w.until(4, 10_000)).slice(1).map((e) => e.id)
    t.same(next, ['2', '3', '4'], 'the next write follows, nothing sent twice')
  })
}
