// The default store: the embedded engine on a data directory. This process holds the
// directory's lock, so it is the only writer and its caches never go stale. Entries map to
// engine namespaces one to one; records live in the engine's system namespaces (records.ts
// here), and token buckets in memory (a restart starts them full, as a new front end would).
import fs from 'node:fs'
import { LRUCache } from 'lru-cache'
import { type RepairReport, open, repair } from '../../engine/index.js'
import type { Db } from '../../engine/index.js'
import type { Durability } from '../../engine/types.js'
import { takeToken } from './token-bucket.js'
import { EmbeddedRecords } from './embedded-records.js'
import { reconcileNamespaces } from './embedded-reconcile.js'
import type { Bucket, Entry, Feed, Limiter, Store } from './types.js'

/** Accounts whose buckets are held at most; an evicted one comes back full (docs/configuration.md). */
const BUCKETS_MAX = 100_000

class MemoryLimiter implements Limiter {
  private buckets = new LRUCache<string, { tokens: number; refilledAt: number }>({
    max: BUCKETS_MAX,
  })

  take(id: string, rate: number, burst: number, now: number, out: Bucket): Bucket {
    let b = this.buckets.get(id)
    if (b === undefined) {
      b = { tokens: -1, refilledAt: now }
      this.buckets.set(id, b)
    }
    return takeToken(b, rate, burst, now, out)
  }
}

export async function openEmbeddedStore(dir: string, durability: Durability): Promise<Store> {
  fs.mkdirSync(dir, { recursive: true })
  const db = await open(dir, { durability })
  try {
    const records = await EmbeddedRecords.open(db)
    await reconcileNamespaces(db)
    return embeddedStore(db, records)
  } catch (err) {
    await db.close().catch(() => {})
    throw err
  }
}

const notYet: Feed = {
  version: () => Promise.resolve(0),
  read: () => Promise.resolve('expired'),
  subscribe: () => () => {},
}

function embeddedStore(db: Db, records: EmbeddedRecords): Store {
  return {
    kind: 'embedded',
    soleWriter: true,
    records,
    limiter: new MemoryLimiter(),
    admin: {
      compact: (opts) => db.compact(opts),
      backup: (to) => db.backup(to),
      stats: () => db.stats(),
    },
    createNamespace: (ns) => db.createNamespace(ns),
    dropNamespace: (ns) => db.dropNamespace(ns),
    async namespaceCounts(ns) {
      const s = db.namespaceStats(ns)
      return s && { keys: s.keys, bytes: s.bytes }
    },
    get: (ns, key) => db.get(ns, key) as Promise<Entry | undefined>,
    getNow: (ns, key) => db.getNow(ns, key) as Entry | undefined,
    stat: (ns, key) => db.stat(ns, key),
    put: (ns, key, value, opts) => db.put(ns, key, value, opts),
    delete: (ns, key, opts) => db.delete(ns, key, opts),
    list: async (ns, opts) => ({ ...(await db.list(ns, opts)), version: 0 }),
    transact: () => Promise.reject(new Error('not built yet')),
    feed: notYet,
    batch: (ns, ops, checks) =>
      db.batch(
        ops.map((op) => ({ ...op, ns })),
        checks && { checks: checks.map((c) => ({ ...c, ns })) },
      ),
    health: () => db.health(),
    flush: () => db.flush(),
    close: () => db.close(),
  }
}

/** `cairn repair`: salvages a damaged data directory (the embedded engine only). */
export function repairData(dir: string): Promise<RepairReport> {
  return repair(dir)
}
export type { RepairReport }
