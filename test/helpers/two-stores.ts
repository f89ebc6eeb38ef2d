// Two stores on one real Redis Cluster, standing for two front ends; closed when the test
// ends.
import { openRedisStore } from '../../server/store/cluster/index.js'
import type { Store } from '../../server/store/types.js'
import type { RedisCluster } from './redis-cluster.js'

export async function twoStores(
  t: { teardown(fn: () => unknown): void },
  cluster: RedisCluster,
): Promise<[Store, Store]> {
  const open = async () => {
    const s = await openRedisStore(cluster.url, { durability: 'always' })
    t.teardown(() => s.close())
    return s
  }
  return [await open(), await open()]
}
