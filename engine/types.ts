// The engine's public types. `engine/index.ts` re-exports them; the server and any
// embedding program depend on these names only.

/** Anything msgpack can encode, or raw bytes (returned byte-exact as a Buffer). */
export type Value = unknown

export type Durability = 'always' | 'interval' | 'none'

export interface OpenOptions {
  /** 'always' (default): a write resolves after fdatasync. 'interval': synced every syncIntervalMs. 'none': left to the OS. */
  durability?: Durability
  /** For durability 'interval'. Default 100 ms. */
  syncIntervalMs?: number
  /** A segment is sealed and a new one started past this size. Default 64 MiB. */
  segmentBytes?: number
  /** Size of the LRU cache of decoded hot values. Default 64 MiB; 0 turns it off. */
  cacheBytes?: number
  /** Compaction starts when dead bytes pass this share of the log (0..1). Default 0.2. */
  compactionDeadRatio?: number
  /** ...and dead bytes pass this many bytes. Default 16 MiB. */
  compactionMinDeadBytes?: number
  /**
   * A checkpoint of the index is written in the background once the log has grown by this
   * many bytes (and by the last checkpoint's size), and at close. Default 64 MiB; 0 writes
   * one only at close.
   */
  checkpointBytes?: number
  /** false turns automatic compaction off (db.compact() still works). Default true. */
  autoCompact?: boolean
  /** Salvage what is intact past a corrupt record instead of refusing to open. */
  repair?: boolean
  /**
   * The clock the engine runs on, in milliseconds since the Unix epoch: keys' expiry (TTL),
   * commit times and what has left a history window. Default Date.now; tests set it to run
   * time forward instead of sleeping against a deadline.
   */
  clock?: () => number
}

/** A namespace's history window: every superseded version is kept this long, within a byte bound. */
export interface HistorySetting {
  /** How long a superseded version stays readable, in seconds (0: no history). */
  seconds: number
  /** At most this many bytes of history; past it the oldest goes first (0: no history). */
  bytes: number
}

/**
 * A point in a namespace's history: a version (the state after that write), or a time in
 * milliseconds since the Unix epoch (the state after every write committed at or before it).
 */
export type HistoryPoint = { version: number } | { at: number }

export interface ListAtOptions {
  prefix?: string
  /** Keys at or after this one. */
  start?: string
  /** Keys before this one. */
  end?: string
  /** Keys strictly after this one (before it, with reverse): a page's `next`. */
  after?: string
  /** Default 1000. */
  limit?: number
  reverse?: boolean
  /** Read each entry's value too. */
  values?: boolean
}

export interface ListAtResult {
  keys: string[]
  entries: { key: string; version: number; value?: Value; expiresAt?: number }[]
  /** Present when more keys remain: pass it as `after` to continue. */
  next?: string
  /** The namespace's version at the point. */
  version: number
}

export interface HistoryOptions {
  /** Default 100. */
  limit?: number
  /** Only versions below this one (a page's last version, to go on). */
  before?: number
}

/** One version of a key, as history() lists them. */
export interface HistoryVersion {
  version: number
  /** Its commit time, milliseconds since the Unix epoch. */
  at: number
  deleted?: true
  value?: Value
  expiresAt?: number
}

export interface PutOptions {
  /** Time to live in milliseconds from now. */
  ttlMs?: number
  /** Absolute expiry, milliseconds since the Unix epoch. */
  expiresAt?: number
  /** Expected current version; null means the key must be absent. */
  ifVersion?: number | null
}

export interface PutResult {
  version: number
  created: boolean
}

export interface GetResult {
  value: Value
  version: number
  /** Milliseconds since the Unix epoch, present when the key has a TTL. */
  expiresAt?: number
}

export interface StatResult {
  version: number
  /** Bytes of key plus value, as the namespace byte counts count them. */
  bytes: number
  expiresAt?: number
}

export interface DeleteOptions {
  ifVersion?: number
}

export interface ListOptions {
  prefix?: string
  /** Keys strictly after this one. */
  after?: string
  /** Default 1000. */
  limit?: number
  reverse?: boolean
  /**
   * The caller only writes the keys out as JSON: where that is cheaper they come as JSON text
   * in ListResult.json, with `keys` empty (copied from the index's bytes, no string made for
   * a key); otherwise as strings.
   */
  json?: boolean
}

export interface ListResult {
  keys: string[]
  /**
   * Only where ListOptions.json asked for it: the page's keys as the UTF-8 text of a JSON
   * array of strings, in place of `keys` (then empty).
   */
  json?: Buffer
  /** Present when more keys remain: pass it as `after` to continue. */
  next?: string
  /** The namespace's version when the page was read (that of its last durable write). */
  version?: number
}

export type BatchOp =
  | { type: 'put'; ns: string; key: string; value: Value; ttlMs?: number; expiresAt?: number }
  | { type: 'delete'; ns: string; key: string }

export interface BatchCheck {
  ns: string
  key: string
  /** null: the key must be absent. */
  version: number | null
}

export interface BatchOptions {
  checks?: BatchCheck[]
}

export interface NamespaceInfo {
  name: string
  keys: number
  bytes: number
  /** Bytes of superseded versions and tombstones its history window keeps (0 without one). */
  historyBytes?: number
}

export interface EngineStats {
  keys: number
  namespaces: number
  /** Bytes of live keys and values as stored. */
  liveBytes: number
  /** Bytes in all segment files. */
  diskBytes: number
  /** Bytes on disk no longer reachable from the index. */
  deadBytes: number
  segments: number
  compactions: number
  /** Bytes compaction has written (its cost: what it copied to reclaim the rest). */
  compactedBytes: number
  writes: number
  fsyncs: number
  /** Total and last fsync durations, for latency metrics. */
  fsyncTotalMs: number
  fsyncLastMs: number
  cacheHits: number
  cacheMisses: number
  /** Reads that met a damaged record. */
  corruptReads: number
  /** Writes that failed because storage did (disk full or an I/O error). */
  writeFailures: number
  /** Bytes of the history windows' files (not counted in diskBytes). */
  historyDiskBytes?: number
}

export type EngineErrorCode =
  | 'CONFLICT'
  | 'NAMESPACE_NOT_FOUND'
  | 'NAMESPACE_EXISTS'
  | 'INVALID_ARGUMENT'
  | 'NOT_A_NUMBER'
  | 'LOCKED'
  | 'CORRUPT'
  | 'CLOSED'
  /** The disk is full: writes are refused until one fits again; reads go on. */
  | 'NO_SPACE'
  /** Storage failed (EIO, EROFS, EMFILE, a failed fsync): writes are refused until a retry works. */
  | 'IO_ERROR'
  /** A point older than the namespace's history window. */
  | 'HISTORY_EXPIRED'
  /** A point that is malformed, in the future, or above the namespace's version. */
  | 'INVALID_POINT'

/** Whether the engine takes writes, and if not, why (see FORMAT.md, "Faults"). */
export type EngineHealth =
  | { state: 'ok' }
  | { state: 'no_space'; reason: string }
  | { state: 'failed'; reason: string }
