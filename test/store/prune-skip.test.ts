// A namespace without expiries skips the expiry prune on Redis (the meta hash's `nx`), and
// an expiry added later is still pruned on time: the next write deletes the expired entry
// as a change of its own.
import { Cluster } from 'ioredis'
import t from 'tap'
import { meta } from '../../server/store/cluster/entries.js'
import { openRedisStore } from '../../server/store/cluster/index.js'
import { clusterFor } from '../helpers/redis-cluster.js'

const cluster = await clusterFor(t)
if (cluster) {
  const store = await openRedisStore(cluster.url, { durability: 'always' })
  t.teardown(() => store.close())
  const probe = new Cluster([{ host: '127.0.0.1', port: cluster.nodes[0]!.port }])
  t.teardown(() => probe.quit())
  const nx = () => probe.hget(meta('skip'), 'nx')

  t.test('no expiries: marked; one added: pruned when due', async (t) => {
    await store.createNamespace('skip')
    await store.put('skip', 'a', Buffer.from('1'), {})
    await store.put('skip', 'b', Buffer.from('2'), {})
    t.equal(await nx(), '1', 'a namespace without expiries is marked')
    await store.put('skip', 'soon', Buffer.from('3'), { ttlMs: 300 })
    t.equal(await nx(), null, 'an expiry added drops the mark')
    await new Promise((r) => setTimeout(r, 600))
    const { version } = await store.put('skip', 'c', Buffer.from('4'), {})
    t.equal(await store.get('skip', 'soon'), undefined, 'the expired entry is gone')
    const feed = await store.feed.read('skip', 3, 10)
    t.same(
      feed === 'expired' ? feed : feed.map((c) => [c.type, c.key, c.version]),
      [
        ['delete', 'soon', version - 1],
        ['put', 'c', version],
      ],
      'deleted as a change of its own, before the write that pruned it',
    )
    await store.put('skip', 'd', Buffer.from('5'), {})
    t.equal(await nx(), '1', 'and with none left the mark is back')
  })
}
