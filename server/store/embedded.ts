// The default store: the embedded engine on a data directory. This process holds the
// directory's lock, so it is the only writer and its caches never go stale. Entries map to
// engine namespaces one to one; records live in the engine's system namespaces (records.ts
// here), and token buckets in memory (a restart starts them full, as a new front end would).
import fs from 'node:fs'
import { type RepairReport, open, repair } from '../../engine/index.js'
import type { Db } from '../../engine/index.js'
import type { Durability, ListResult } from '../../engine/types.js'
import { TokenBuckets } from './token-bucket.js'
import { EmbeddedRecords } from './embedded-records.js'
import { reconcileNamespaces } from './embedded-reconcile.js'
import { EmbeddedFeed } from './embedded-feed.js'
import { countRange, listRange, listRangeNow } from './embedded-range.js'
import { Snapshots } from './embedded-snapshot.js'
import { transact } from './embedded-tx.js'
import { embeddedHistory } from './embedded-history.js'
import { METADATA_HEAD, hasMetadata, metadataText, valueText, wrap } from './envelope.js'
import type {
  EngineTuning,
  Entry,
  Limiter,
  ListOptions,
  Listed,
  ListedEntry,
  Store,
} from './types.js'

/** Accounts whose buckets are held at most; an evicted one comes back full (docs/configuration.md). */
const BUCKETS_MAX = 100_000

export async function openEmbeddedStore(
  dir: string,
  durability: Durability,
  tuning: EngineTuning = {},
  clock?: { now(): number },
): Promise<Store> {
  fs.mkdirSync(dir, { recursive: true })
  const db = await open(dir, { ...tuning, durability, clock: clock && (() => clock.now()) })
  try {
    const records = await EmbeddedRecords.open(db)
    await reconcileNamespaces(db)
    return embeddedStore(db, records)
  } catch (err) {
    await db.close().catch(() => {})
    throw err
  }
}

/** The engine's answer with the metadata taken out of the stored bytes (envelope.ts). */
function entryOf(got: Entry | undefined): Entry | undefined {
  if (got === undefined || !hasMetadata(got.value)) return got
  const e: Entry = { value: valueText(got.value), version: got.version }
  if (got.expiresAt !== undefined) e.expiresAt = got.expiresAt
  e.metadata = metadataText(got.value)
  return e
}

async function list(db: Db, ns: string, o: ListOptions = {}): Promise<Listed> {
  return pageOf(db, ns, o, await listRange(db, ns, engineOptions(o)))
}

function listNow(db: Db, ns: string, o: ListOptions = {}): Listed | undefined {
  const res = listRangeNow(db, ns, engineOptions(o))
  return res === undefined ? undefined : pageOf(db, ns, o, res)
}

/** Entries are read by key: a listing with `include` (or a range) needs its keys as strings. */
const engineOptions = (o: ListOptions): ListOptions =>
  (o.include || o.start || o.end) && o.json ? { ...o, json: false } : o

function pageOf(db: Db, ns: string, o: ListOptions, res: ListResult): Listed {
  const out: Listed = { keys: res.keys, version: res.version ?? 0 }
  if (res.json !== undefined) out.json = res.json
  if (res.next !== undefined) out.next = res.next
  if (!o.include) return out
  // Read in the same turn as the keys (the index is in memory), so the page is one snapshot.
  const entries: ListedEntry[] = []
  const keys: string[] = []
  let bytes = 0
  for (const key of res.keys) {
    const got = db.getNow(ns, key) as Entry | undefined
    if (got === undefined) continue
    const e: ListedEntry = { key, version: got.version }
    if (got.expiresAt !== undefined) e.expiresAt = got.expiresAt
    if (o.include.values) {
      e.value = valueText(got.value)
      bytes += e.value.length
    }
    if (o.include.metadata) e.metadata = metadataText(got.value) ?? null
    entries.push(e)
    keys.push(key)
    if (o.maxBytes !== undefined && bytes > o.maxBytes) break
  }
  out.entries = entries
  out.keys = keys
  // A page cut short by its bytes continues after its last entry.
  if (keys.length < res.keys.length && keys.length > 0 && res.keys.at(-1) !== keys.at(-1))
    out.next = keys.at(-1)
  return out
}

/**
 * How often keys whose time ran out are looked for, and how many keys a look may pass: an
 * expiry is a write (a delete at the next version) that watchers hear of within seconds.
 */
const SWEEP_MS = 3000
const SWEEP_KEYS = 200_000

function embeddedStore(db: Db, records: EmbeddedRecords): Store {
  const feed = new EmbeddedFeed(db)
  const snapshots = new Snapshots(db)
  const sweeper = setInterval(() => {
    try {
      db.sweepExpired(SWEEP_KEYS)
    } catch {
      // Closed meanwhile.
    }
  }, SWEEP_MS)
  sweeper.unref()
  return {
    kind: 'embedded',
    supports: { soleWriter: true, metadataOverhead: METADATA_HEAD },
    records,
    limiter: new TokenBuckets(BUCKETS_MAX) satisfies Limiter,
    admin: {
      compact: (opts) => db.compact(opts),
      backup: (to) => db.backup(to),
      stats: () => db.stats(),
    },
    feed,
    history: embeddedHistory(db),
    createNamespace: (ns) => db.createNamespace(ns),
    async dropNamespace(ns) {
      const dropped = await db.dropNamespace(ns)
      feed.dropped(ns)
      return dropped
    },
    async namespaceCounts(ns) {
      const s = db.namespaceStats(ns)
      return s && { keys: s.keys, bytes: s.bytes }
    },
    get: async (ns, key) => entryOf((await db.get(ns, key)) as Entry | undefined),
    getNow: (ns, key) => entryOf(db.getNow(ns, key) as Entry | undefined),
    stat: (ns, key) => db.stat(ns, key),
    put: (ns, key, value, opts) => db.put(ns, key, wrap(value, opts?.metadata), opts),
    delete: (ns, key, opts) => db.delete(ns, key, opts),
    list: (ns, opts) => list(db, ns, opts),
    listNow: (ns, opts) => listNow(db, ns, opts),
    transact: (ns, ops) => transact(db, ns, ops),
    countRange: (ns, range) => countRange(db, ns, range),
    snapshot: (ns, range) => snapshots.take(ns, range),
    health: () => db.health(),
    flush: () => db.flush(),
    close: () => {
      clearInterval(sweeper)
      feed.close()
      return db.close()
    },
  }
}

/** `cairn repair`: salvages a damaged data directory (the embedded engine only). */
export function repairData(dir: string): Promise<RepairReport> {
  return repair(dir)
}
export type { RepairReport }
