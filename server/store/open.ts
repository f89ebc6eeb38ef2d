// Picks the store: `--store redis://...` (or CAIRN_STORE) opens Redis Cluster; without one,
// the embedded engine on the data directory.
import type { Durability } from '../../engine/types.js'
import { openEmbeddedStore } from './embedded.js'
import type { EngineTuning, Store } from './types.js'
import { isRedisUrl } from './url.js'

export async function openStore(where: {
  dataDir: string
  store?: string
  durability: Durability
  /** The engine's tuning; Redis has none of these. */
  engine?: EngineTuning
  /** The engine's clock (OpenOptions.clock); Redis keeps its own time. */
  clock?: { now(): number }
}): Promise<Store> {
  if (where.store !== undefined && where.store !== '') {
    if (!isRedisUrl(where.store))
      throw new Error(`--store takes a redis:// or rediss:// URL, not "${where.store}"`)
    // Loaded only when asked for: the embedded default never loads the Redis client.
    const { openRedisStore } = await import('./cluster/index.js')
    return openRedisStore(where.store, { durability: where.durability })
  }
  return openEmbeddedStore(where.dataDir, where.durability, where.engine, where.clock)
}
