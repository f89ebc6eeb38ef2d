// The storage seam: everything the service needs from storage, and nothing else. Two
// implementations: the embedded engine (embedded.ts, the default) and Redis Cluster
// (cluster/; docs/redis.md). Every server module reaches storage through a `Store`; operations only the
// embedded engine has (compaction, backup, repair, engine statistics) sit behind `admin`.
//
// Two kinds of data live here:
// - entries: an account's keys and JSON values, in namespaces, with versions, TTLs,
//   conditional writes, ordered prefix listing and atomic multi-op writes in one namespace;
// - records: the small documents the service keeps (accounts, API keys, namespaces,
//   sessions, usage), each named by a kind and an id, grouped by the id's first part.
import type { EngineStats } from '../../engine/types.js'

/** How soon a write is on disk (on Redis: in the AOF, and on a replica); see docs/configuration.md. */
export type { Durability } from '../../engine/types.js'
/** The embedded engine's figures, behind `admin`. */
export type { EngineStats } from '../../engine/types.js'

/** A stored entry. The value is the bytes as written (the API's JSON text). */
export interface Entry {
  value: Buffer
  version: number
  /** Milliseconds since the Unix epoch, present when the key has a TTL. */
  expiresAt?: number
}

export interface EntryStat {
  version: number
  /** Bytes of key (UTF-8) plus value, as the namespace's byte count counts them. */
  bytes: number
  expiresAt?: number
}

export interface EntryWrite {
  /** Time to live in milliseconds from now. */
  ttlMs?: number
  /** Absolute expiry, milliseconds since the Unix epoch. */
  expiresAt?: number
  /** Expected current version; null means the key must be absent. */
  ifVersion?: number | null
}

export interface Written {
  version: number
  created: boolean
}

export interface ListOptions {
  prefix?: string
  /** Keys strictly after this one (strictly before it when reverse). */
  after?: string
  /** Default 1000. */
  limit?: number
  reverse?: boolean
}

export interface Listed {
  keys: string[]
  /** Present when more keys remain: pass it as `after` to continue. */
  next?: string
}

export type EntryOp =
  | { type: 'put'; key: string; value: Buffer; ttlMs?: number; expiresAt?: number }
  | { type: 'delete'; key: string }

export interface EntryCheck {
  key: string
  /** null: the key must be absent. */
  version: number | null
}

/** An entry as copied from another store, version and all (cairn migrate). */
export interface Restored extends Entry {
  key: string
}

export interface NamespaceCounts {
  keys: number
  /** Bytes of keys plus values. */
  bytes: number
}

/**
 * Errors a store rejects with carry one of these codes (as `err.code`):
 * CONFLICT (a condition failed), NAMESPACE_NOT_FOUND, NO_SPACE (storage full),
 * IO_ERROR (storage failing or unreachable; retry later), CORRUPT (damaged data),
 * CLOSED, INVALID_ARGUMENT.
 */
export type StoreErrorCode =
  | 'CONFLICT'
  | 'NAMESPACE_NOT_FOUND'
  | 'NO_SPACE'
  | 'IO_ERROR'
  | 'CORRUPT'
  | 'CLOSED'
  | 'INVALID_ARGUMENT'

/** Whether the store takes writes, and if not, why. */
export type StoreHealth =
  | { state: 'ok' }
  | { state: 'no_space'; reason: string }
  | { state: 'failed'; reason: string }

/** The outcome of one token-bucket check, reused rather than allocated per request. */
export interface Bucket {
  ok: boolean
  /** The burst; -1 when there is no limit. */
  limit: number
  remaining: number
  /** Seconds until the bucket is full. */
  reset: number
  /** Whole seconds until one token is back (when refused). */
  retryAfter: number
}

/** The entry operations: an account's data. `ns` is the store's name for a namespace. */
export interface Entries {
  /** Resolves true if it was created, false if it already existed. */
  createNamespace(ns: string): Promise<boolean>
  /** Removes the namespace and all its entries. Resolves true if it existed. */
  dropNamespace(ns: string): Promise<boolean>
  /** Live keys and their bytes; undefined when the namespace does not exist. */
  namespaceCounts(ns: string): Promise<NamespaceCounts | undefined>
  get(ns: string, key: string): Promise<Entry | undefined>
  /**
   * Optional: get() answered synchronously, for stores that can (the embedded engine keeps
   * its index in memory). Throws what get() would reject with.
   */
  getNow?(ns: string, key: string): Entry | undefined
  stat(ns: string, key: string): Promise<EntryStat | undefined>
  put(ns: string, key: string, value: Buffer, opts?: EntryWrite): Promise<Written>
  /** true when a live key was deleted. `ifVersion` that does not match rejects with CONFLICT. */
  delete(ns: string, key: string, opts?: { ifVersion?: number }): Promise<boolean>
  list(ns: string, opts?: ListOptions): Promise<Listed>
  /** All or nothing, also across a crash; every check holds or nothing is written (CONFLICT). */
  batch(ns: string, ops: EntryOp[], checks?: EntryCheck[]): Promise<{ version: number }>
}

export type RecordKind = 'account' | 'email' | 'key' | 'keyhash' | 'namespace' | 'session' | 'usage'

export type RecordOp =
  | { kind: RecordKind; id: string; value: unknown; expiresAt?: number }
  | { kind: RecordKind; id: string; delete: true }

/**
 * The service's small records: JSON-able values named by kind and id. An id's group is its
 * part before the first `/` (the whole id when it has none); records of one group are kept
 * together (one hash slot on Redis), so `batch` and `create` on one group are atomic and
 * `list` walks one group in id order.
 */
export interface Records {
  get<T>(kind: RecordKind, id: string): Promise<T | undefined>
  /** Optional: get() answered synchronously, where the store keeps records in memory. */
  getNow?<T>(kind: RecordKind, id: string): T | undefined
  put(kind: RecordKind, id: string, value: unknown, opts?: { expiresAt?: number }): Promise<void>
  /**
   * Writes only when no record of that kind and id exists, and (with `maxInGroup`) while the
   * group holds fewer than that many records of the kind.
   */
  create(
    kind: RecordKind,
    id: string,
    value: unknown,
    opts?: { maxInGroup?: number },
  ): Promise<'created' | 'exists' | 'full'>
  delete(kind: RecordKind, id: string): Promise<boolean>
  /**
   * Records of a kind whose ids start with `prefix`, in id order, a page at a time. The
   * prefix is a group followed by `/`, or '' (every record) for the kind 'account' only.
   */
  list<T>(
    kind: RecordKind,
    prefix: string,
    after?: string,
    limit?: number,
  ): Promise<{ items: [string, T][]; next?: string }>
  /** Atomic when every id shares one group; otherwise applied in order. */
  batch(ops: RecordOp[]): Promise<void>
  /**
   * Adds to numeric fields of a counter record, creating it (usage counters), and sets the
   * fields in `set`; resolves with every field's value after the change.
   */
  add(
    kind: 'usage',
    id: string,
    fields: Record<string, number>,
    set?: Record<string, number>,
  ): Promise<Record<string, number>>
}

/** Token buckets kept by the store, shared by every front end that uses it. */
export interface Limiter {
  /**
   * Takes one token from bucket `id` (rate per second, up to burst) and fills `out`.
   * Synchronous where the store can be (the embedded one keeps buckets in memory).
   */
  take(id: string, rate: number, burst: number, now: number, out: Bucket): Bucket | Promise<Bucket>
}

/** What only the embedded engine can do: the operator's maintenance and its statistics. */
export interface StoreAdmin {
  compact(opts?: { full?: boolean }): Promise<void>
  backup(toDir: string): Promise<void>
  /** The engine's figures for metrics and the operator endpoint (see engine/types.ts). */
  stats(): EngineStats
}

export interface Store extends Entries {
  readonly kind: 'embedded' | 'redis'
  /** Whether this process is the store's only writer (the embedded engine holds a lock). */
  readonly soleWriter: boolean
  readonly records: Records
  readonly limiter: Limiter
  /** Synchronous and cheap: whether writes are taken now. */
  health(): StoreHealth
  /** The embedded engine's maintenance, undefined on other stores. */
  readonly admin: StoreAdmin | undefined
  /**
   * Writes entries with the versions they had in another store and moves the namespace's
   * version counter past them: `cairn migrate`'s way in. Stores that are only migrated
   * from (the embedded one) leave it out.
   */
  restore?(ns: string, rows: Restored[]): Promise<void>
  /** Makes what is buffered durable (the embedded engine's interval mode). */
  flush(): Promise<void>
  close(): Promise<void>
}
