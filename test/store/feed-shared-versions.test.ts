// A change feed on Redis written before every write took a version of its own can hold changes
// that share one, with stream ids <v>-0, <v>-1 (docs/redis.md, "Change feed"). Watchers pass
// such a change on once; a watcher of the whole namespace, whose groups of changes can go out
// whole, must send the same events as one with a prefix, which goes change by change.
import t from 'tap'
import { feedKeysOf } from '../helpers/feed-stream.js'
import { serverOnCluster } from '../helpers/cluster-server.js'
import { watch } from '../server/contract/sse.js'

const on = await serverOnCluster(t)
if (on) {
  const { srv, made, api, redis } = on

  t.test('a version two changes share goes to every watcher once', async (t) => {
    t.equal((await api.post('/namespaces', { name: 'shared' })).status, 201)
    t.equal((await api.put('/shared/a', { value: 1 })).status, 201)
    // The namespace's keys on Redis, found by its feed: c:{n:<store name>}:<g>:f.
    const keys = await feedKeysOf(redis, 'shared')
    t.ok(keys, 'the feed stream is there')
    const { feed, meta: metaKey } = keys!
    t.equal(await redis.hget(metaKey, 'ver'), '1')

    const whole = await watch(srv.baseUrl, '/shared?watch=1', made.apiKey)
    const narrow = await watch(srv.baseUrl, '/shared?watch=1&prefix=b', made.apiKey)
    t.teardown(() => {
      whole.close()
      narrow.close()
    })
    await whole.until(1)
    await narrow.until(1)
    // As an older version wrote a batch: two changes at version 2, then one at 3, all added
    // to the stream at once so that the feed reads them as one group, with the message every
    // write script sends on its stream (cluster/feed.ts: live changes are read on it).
    await redis
      .multi()
      .xadd(feed, '2-0', 't', 'p', 'k', 'b1', 'v', '"first"')
      .xadd(feed, '2-1', 't', 'p', 'k', 'b2', 'v', '"second"')
      .xadd(feed, '3-0', 't', 'p', 'k', 'b3', 'v', '"third"')
      .hset(metaKey, 'ver', '3')
      .call('SPUBLISH', feed, '')
      .exec()
    const seen = (w: typeof whole) => w.events.slice(1).map((e) => [e.id, e.data.key])
    const want = [
      ['2', 'b1'],
      ['3', 'b3'],
    ]
    t.same(
      (await whole.until(3)).slice(1).map((e) => [e.id, e.data.key]),
      want,
    )
    t.same(
      (await narrow.until(3)).slice(1).map((e) => [e.id, e.data.key]),
      want,
    )
    await new Promise((r) => setTimeout(r, 300))
    t.same(seen(whole), want, 'the whole-namespace watcher: nothing more')
    t.same(seen(narrow), seen(whole), 'both watchers got the same events')
  })
}
