// Usage additions on a shared store carry a token (server/services/usage.ts, Records.add): one sent
// again after its answer was lost (a timeout, a closed connection that ioredis resends on,
// a failover) is made once. Two stores on one real Redis Cluster stand for two front ends.
import t from 'tap'
import { clusterFor } from '../helpers/redis-cluster.js'
import { twoStores } from '../helpers/two-stores.js'

const cluster = await clusterFor(t)
if (cluster) {
  const [a, b] = await twoStores(t, cluster)

  t.test('an addition made under a token is made once, whoever sends it again', async (t) => {
    const id = `acct_tok${Date.now()}/2026-11-26`
    const first = await a.records.add('usage', id, { get: 2, bytesOut: 40 }, {}, 'fe1.1')
    t.same([first.get, first.bytesOut], [2, 40])
    const again = await a.records.add('usage', id, { get: 2, bytesOut: 40 }, {}, 'fe1.1')
    t.same([again.get, again.bytesOut], [2, 40], 'sent again: not added again, totals answered')
    const other = await b.records.add('usage', id, { get: 3 }, { storageBytes: 9 }, 'fe2.1')
    t.same([other.get, other.storageBytes], [5, 9], "another front end's token adds")
    const next = await a.records.add('usage', id, { get: 1 }, {}, 'fe1.2')
    t.equal(next.get, 6, 'the next token adds')
    const plain = await a.records.add('usage', id, { get: 1 })
    const plainAgain = await a.records.add('usage', id, { get: 1 })
    t.same([plain.get, plainAgain.get], [7, 8], 'without a token every call adds')
    t.same(await b.records.get('usage', id), { get: 8, bytesOut: 40, storageBytes: 9 })
  })
}
