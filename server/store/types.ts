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
import type { EngineStats, OpenOptions } from '../../engine/types.js'

/** How soon a write is on disk (on Redis: in the AOF, and on a replica); see docs/configuration.md. */
export type { Durability } from '../../engine/types.js'
/** The embedded engine's figures, behind `admin`. */
export type { EngineStats } from '../../engine/types.js'

/** The embedded engine's tuning that `cairn serve` passes through (docs/configuration.md). */
export type EngineTuning = Pick<
  OpenOptions,
  | 'syncIntervalMs'
  | 'segmentBytes'
  | 'cacheBytes'
  | 'compactionDeadRatio'
  | 'compactionMinDeadBytes'
  | 'checkpointBytes'
  | 'autoCompact'
>

/** A stored entry. The value is the bytes as written (the API's JSON text). */
export interface Entry {
  value: Buffer
  /** The namespace's version when this entry was written (versions are per namespace). */
  version: number
  /** Milliseconds since the Unix epoch, present when the key has a TTL. */
  expiresAt?: number
  /** The metadata's JSON text (an object), present when the entry has some. */
  metadata?: Buffer
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
  /** The metadata's JSON text; absent means none (every put replaces it). */
  metadata?: Buffer
}

export interface Written {
  version: number
  created: boolean
}

export interface ListOptions {
  prefix?: string
  /** Keys at or after this one ('' or absent: no bound); within the prefix when one is given. */
  start?: string
  /** Keys before this one ('' or absent: no bound). */
  end?: string
  /** Keys strictly after this one (strictly before it when reverse). */
  after?: string
  /** Default 1000. */
  limit?: number
  reverse?: boolean
  /** Answer `entries` (with versions and expiry) instead of bare keys. */
  include?: { values?: boolean; metadata?: boolean }
  /** With values: the page ends after the entry that takes its value bytes past this. */
  maxBytes?: number
  /**
   * Without `include`, when the keys are only written out as JSON: a store may answer them
   * as JSON text in `Listed.json`, with `keys` empty, where that is cheaper.
   */
  json?: boolean
}

/** One entry of a listing with `include`. */
export interface ListedEntry {
  key: string
  version: number
  expiresAt?: number
  /** The value's JSON text, when values were asked for. */
  value?: Buffer
  /** When metadata was asked for: its JSON text, or null when the entry has none. */
  metadata?: Buffer | null
}

export interface Listed {
  keys: string[]
  /** Where ListOptions.json allowed it: the keys as the UTF-8 text of a JSON array. */
  json?: Buffer
  /** With `include`: the same keys as entries. */
  entries?: ListedEntry[]
  /** Present when more keys remain: pass it as `after` to continue. */
  next?: string
  /** The namespace's version when the page was read. */
  version: number
}

/**
 * One operation of a transaction (`transact`). Every op names a key of the one namespace;
 * writes get consecutive versions in op order; `get` and `check` see the state before the
 * transaction's writes. `patch` is PATCH /{ns}/{key}: an increment and/or a new expiry and/or
 * new metadata, keeping what it does not change.
 */
export type TxOp =
  | { op: 'check'; key: string; version: number | null }
  | { op: 'get'; key: string; metadata?: boolean }
  | {
      op: 'put'
      key: string
      value: Buffer
      ttlMs?: number
      expiresAt?: number
      metadata?: Buffer
      ifVersion?: number | null
    }
  | { op: 'delete'; key: string; ifVersion?: number }
  | {
      op: 'increment'
      key: string
      by: bigint
      /** The most bytes the new value's text may be: past it, VALUE_TOO_LARGE. */
      maxBytes?: number
    }
  | {
      op: 'patch'
      key: string
      /** An increment; a missing key starts at 0 and is created. */
      by?: bigint
      /** As for an increment. */
      maxBytes?: number
      ttlMs?: number
      expiresAt?: number
      /** Removes the expiry. */
      persist?: true
      /** null removes the metadata; undefined keeps it. */
      metadata?: Buffer | null
      ifVersion?: number
    }

export type TxResult =
  | Record<string, never>
  | { found: false }
  | { found: true; value: Buffer; version: number; expiresAt?: number; metadata?: Buffer | null }
  | { created: boolean; version: number }
  | { deleted: boolean }
  /** increment; patch (value only with `by`). */
  | { value?: bigint; version: number; created?: boolean }

export interface Transacted {
  /** The last write's version, or the namespace's current one when nothing was written. */
  version: number
  results: TxResult[]
}

/** A change to an entry, as the watch feed delivers it (an expiry is a delete). */
export interface Change {
  type: 'put' | 'delete'
  key: string
  version: number
  /** put: the value's JSON text. */
  value?: Buffer
  expiresAt?: number
  metadata?: Buffer
}

/**
 * The change feed: every committed write of a namespace, in version order, as the write path
 * makes it durable. History reaches back at least 10,000 changes (or 64 MiB) per namespace.
 */
export interface Feed {
  /** The namespace's current (acknowledged) version. */
  version(ns: string): Promise<number>
  /**
   * Changes with versions above `since`, oldest first, at most `limit` (a short answer may
   * still leave more: ask again from the last one). 'expired' when history no longer reaches
   * back to `since`.
   */
  read(ns: string, since: number, limit: number): Promise<Change[] | 'expired'>
  /**
   * Live changes of a namespace, as they are committed (in version order, none twice). The
   * listener may miss nothing between subscribe() and the returned function being called.
   * `lost` is called, and nothing more delivered, when changes already delivered are found
   * gone from the namespace (on Redis, a failover that lost changes no replica had, their
   * versions then taken again): what the listener was handed is no longer what the
   * namespace holds. The embedded store never calls it.
   */
  subscribe(ns: string, listener: (changes: Change[]) => void, lost?: () => void): () => void
}

/** An entry as copied from another store, version and all (cairn migrate). */
export interface Restored extends Entry {
  key: string
}

/** A prefix and/or a range of keys ('' or absent: no bound), as ListOptions take them. */
export interface KeyRangeOptions {
  prefix?: string
  start?: string
  end?: string
}

/** The live keys of a range and their bytes (key plus value), at the namespace's version. */
export interface RangeCounts {
  count: number
  bytes: number
  version: number
}

/** An entry as an export reads it. */
export interface ExportedEntry extends Entry {
  key: string
}

/**
 * A read of a range as it was at one version, a page at a time, whatever is written
 * meanwhile (an export). Close it when done: the store keeps what writes since `version`
 * replaced, for the keys the read has not passed yet.
 */
export interface RangeSnapshot {
  /** The namespace's version the entries are read at. */
  readonly version: number
  /** The next entries in key order, at most `limit`; empty at the end. */
  next(limit: number): Promise<ExportedEntry[]>
  close(): void
}

export interface NamespaceCounts {
  keys: number
  /** Bytes of keys plus values. */
  bytes: number
}

/**
 * Errors a store rejects with carry one of these codes (as `err.code`):
 * CONFLICT (a condition failed; from `transact`, err.index names the op), NAMESPACE_NOT_FOUND, NO_SPACE (storage full),
 * IO_ERROR (storage failing or unreachable; retry later), CORRUPT (damaged data),
 * CLOSED, INVALID_ARGUMENT, VALUE_TOO_LARGE (from `transact`: an increment's result past its
 * op's maxBytes; err.index names the op). An IO_ERROR from a shared store may come for a
 * change that is made all the same (sent, its answer lost): data writes say so to the
 * client (a 503 may have applied), and usage additions carry a token (Records.add).
 */
export type StoreErrorCode =
  | 'CONFLICT'
  /** A transaction's increment met a value that is not an integer (err.index names the op). */
  | 'NOT_A_NUMBER'
  /** A transaction's patch without an increment met a missing key (err.index). */
  | 'KEY_NOT_FOUND'
  | 'NAMESPACE_NOT_FOUND'
  | 'NO_SPACE'
  | 'IO_ERROR'
  | 'CORRUPT'
  | 'CLOSED'
  | 'INVALID_ARGUMENT'
  /** A transaction's increment whose result would pass its op's maxBytes (err.index). */
  | 'VALUE_TOO_LARGE'
  /** A point older than the namespace's history window (EntryHistory). */
  | 'HISTORY_EXPIRED'
  /** A point that names no state: malformed, in the future, above the namespace's version. */
  | 'INVALID_POINT'

/** Whether the store takes writes, and if not, why. */
export type StoreHealth =
  | { state: 'ok' }
  | { state: 'no_space'; reason: string }
  /** Part of a shared store does not answer; the rest serves (Redis: a master down). */
  | { state: 'degraded'; reason: string }
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
  /**
   * Optional, as getNow: list() answered synchronously; undefined when only list() can
   * answer now. Throws what list() would reject with.
   */
  listNow?(ns: string, opts?: ListOptions): Listed | undefined
  /** The live keys of a prefix or range, their bytes, and the version they were counted at. */
  countRange(ns: string, range: KeyRangeOptions): Promise<RangeCounts>
  /** A consistent read of a prefix or range at the namespace's current version (an export). */
  snapshot(ns: string, range: KeyRangeOptions): Promise<RangeSnapshot>
  /**
   * A transaction: all or nothing, in op order (see TxOp). A failed check, ifVersion or
   * patch rejects with CONFLICT, NOT_A_NUMBER or KEY_NOT_FOUND and `err.index`, writing
   * nothing. A delete of a missing key writes nothing (no version).
   */
  transact(ns: string, ops: TxOp[]): Promise<Transacted>
}

export type RecordKind =
  | 'account'
  | 'email'
  | 'key'
  | 'keyhash'
  | 'namespace'
  | 'session'
  | 'usage'
  /** Paid plans through Stripe (services/billing/): a customer's account, by customer id. */
  | 'stripe_customer'
  /** A Stripe event id already acted on (or being acted on), kept for a month. */
  | 'stripe_event'
  /** A downgrade due at the end of a paid period: `due/<account id>`. */
  | 'downgrade'
  /** Usage thresholds crossed (created once per crossing: one alert across front ends). */
  | 'alert'
  /** Notification webhooks, their outbox and its claims. */
  | 'webhook'
  /** A metered plan's hour sent to Stripe (or claimed for sending): `<account id>/<hour>`. */
  | 'meter'

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
   * fields in `set`; resolves with every field's value after the change. `token` names the
   * addition: one already made under that token (within two days) is not made again, so an
   * add sent again after its answer was lost (a timeout, a connection closed, a failover,
   * ioredis resending it) counts once.
   */
  add(
    kind: 'usage',
    id: string,
    fields: Record<string, number>,
    set?: Record<string, number>,
    token?: string,
  ): Promise<Record<string, number>>
}

/**
 * What an account holds at once (its open watches), counted across every front end of a
 * shared store. A front end that dies lets go of its holds within a lease time.
 */
export interface Holds {
  /** Takes a hold of group `group` for `holder` (unique) unless `max` are held already. */
  take(group: string, holder: string, max: number): Promise<boolean>
  /** Lets `holder` go (never fails: a hold not let go lapses). */
  release(group: string, holder: string): void
}

/**
 * An account's storage total kept in a shared store, with the writes under way reserved
 * beside it, so that front ends writing at once cannot all pass the quota.
 */
export interface StorageTotals {
  /**
   * Reserves `delta` bytes for `holder` if the total, the writes under way and it fit in
   * `max`: 'over' if not, 'unknown' if no total is kept (count it and call base).
   */
  reserve(
    id: string,
    holder: string,
    delta: number,
    max: number,
  ): Promise<'ok' | 'over' | 'unknown'>
  /** Sets the total counted now where none is kept, or with `replace` where no write is under way. */
  base(id: string, bytes: number, replace: boolean): Promise<boolean>
  /** The write of `holder` is done, having added `delta` bytes (0: failed). Never fails. */
  settle(id: string, holder: string, delta: number): void
}

/** Token buckets kept by the store, shared by every front end that uses it. */
export interface Limiter {
  /**
   * Takes `cost` tokens (default 1) from bucket `id` (rate per second, up to burst) and fills
   * `out`. Synchronous where the store can be (the embedded one keeps buckets in memory).
   */
  take(
    id: string,
    rate: number,
    burst: number,
    now: number,
    out: Bucket,
    cost?: number,
  ): Bucket | Promise<Bucket>
}

/** The Redis read lane's counts since start (server/store/cluster/read-lane.ts). */
export interface ReadLaneStats {
  /** Calls sent on the lane's own connections. */
  calls: number
  /** Calls the lane sent through ioredis instead: answers about the cluster, lost or quiet connections. */
  rerouted: number
  /** Lane connections lost or given up on. */
  lost: number
}

/** What only the embedded engine can do: the operator's maintenance and its statistics. */
/**
 * A point in a namespace's history: a version (the state after that write), or a time in
 * milliseconds since the Unix epoch (the state after every write committed at or before it).
 */
export type HistoryPoint = { version: number } | { at: number }

/** One version of a key, newest first in EntryHistory.versions. */
export interface EntryVersion {
  version: number
  /** Its commit time, milliseconds since the Unix epoch. */
  at: number
  deleted?: true
  /** The value's JSON text (not for a delete). */
  value?: Buffer
  expiresAt?: number
  /** The metadata's JSON text, when the version had some. */
  metadata?: Buffer
}

/**
 * A namespace's history window and reads at a point (the contract's "History and restore").
 * A point older than the window rejects with code HISTORY_EXPIRED; a time in the future, a
 * version above the namespace's, or a malformed point with INVALID_POINT.
 */
export interface EntryHistory {
  /** Keeps every superseded version `seconds` long, at most `bytes` of them (0: none). */
  setWindow(ns: string, window: { seconds: number; bytes: number }): Promise<void>
  /** The entry as it was at the point; undefined when it did not exist then. */
  getAt(ns: string, key: string, point: HistoryPoint): Promise<Entry | undefined>
  /** A page of the namespace as it was at the point; `version` is the point's version. */
  listAt(
    ns: string,
    opts: ListOptions & { start?: string; end?: string },
    point: HistoryPoint,
  ): Promise<Listed>
  /** The key's versions within the history, newest first. */
  versions(
    ns: string,
    key: string,
    opts?: { limit?: number; before?: number },
  ): Promise<EntryVersion[]>
  /** The oldest readable point, and the bytes the window holds. */
  window(ns: string): Promise<{ from: { version: number; at: number }; bytes: number }>
}

export interface StoreAdmin {
  compact(opts?: { full?: boolean }): Promise<void>
  backup(toDir: string): Promise<void>
  /** The engine's figures for metrics and the operator endpoint (see engine/types.ts). */
  stats(): EngineStats
}

/**
 * What a backend is, in the manner of abstract-level's `db.supports`: the facts the services
 * branch on that no operation's presence tells. Operations a backend may lack stay optional
 * members of Store (`getNow?`, `listNow?`, `restore?`, `holds?`, `storageTotals?`,
 * `readLane?`, `history?`) and are not repeated here as booleans: the compiler makes every
 * caller check the member itself, and a flag beside it could say yes while the member is
 * missing. What ties the two is a rule the shared suite checks (test/store/suite/supports.ts):
 * `holds` and `storageTotals` are there exactly when the store is not its sole writer.
 */
export interface StoreSupports {
  /**
   * This process is the store's only writer (the embedded engine holds a lock): what the
   * process keeps in memory (accounts, namespaces, sessions, usage) is the truth, never stale.
   * Otherwise other front ends write too, and counts across them live in the store.
   */
  readonly soleWriter: boolean
  /**
   * Bytes an entry's metadata adds to its namespace's count, beyond the metadata's own
   * length (the embedded store keeps it inside the value, behind a 5-byte header), or -1
   * when metadata is not counted at all (Redis: keys plus values only).
   */
  readonly metadataOverhead: number
}

export interface Store extends Entries {
  readonly kind: 'embedded' | 'redis'
  /** What this backend is (see StoreSupports). */
  readonly supports: StoreSupports
  readonly records: Records
  readonly limiter: Limiter
  /** Holds counted across front ends; absent where one process is the only writer. */
  readonly holds?: Holds
  /** Storage totals counted across front ends; absent where one process is the only writer. */
  readonly storageTotals?: StorageTotals
  readonly feed: Feed
  /** Synchronous and cheap: whether writes are taken now. */
  health(): StoreHealth
  /** The embedded engine's maintenance, undefined on other stores. */
  readonly admin: StoreAdmin | undefined
  /** On Redis: how the read lane has fared since start (for metrics). */
  readonly readLane?: () => ReadLaneStats
  /** What the store could not do at open and the server should log (a node not answering). */
  readonly startNotes?: string[]
  /**
   * Writes entries with the versions they had in another store, and moves the namespace's
   * version counter to `version` (the namespace's own there) or past the entries, never
   * back: `cairn migrate`'s way in. An entry already here with a newer version (written
   * since an earlier run) is kept. Stores that are only migrated from (the embedded one)
   * leave it out.
   */
  restore?(ns: string, rows: Restored[], version: number): Promise<void>
  /** History windows and reads at a point (the engine's windows; on Redis, cluster/history.ts). */
  readonly history?: EntryHistory
  /** Makes what is buffered durable (the embedded engine's interval mode). */
  flush(): Promise<void>
  close(): Promise<void>
}
