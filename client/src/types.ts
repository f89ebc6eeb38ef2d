// Shapes of the client's options and of what its methods return.
import type { BigIntMode } from './json.js'
import type { RetryEvent, RetryOptions } from './retry.js'
import type { FetchLike } from './transport.js'

/** Options for {@link Cairn}. */
export interface ClientOptions {
  /**
   * The API's base URL, ending in `/v1`, e.g. `https://kv.example.com/v1`. A URL with no
   * path gets `/v1` added. Defaults to the `CAIRN_URL` environment variable where the
   * runtime has one (Node, Bun, Deno with env permission); required elsewhere.
   */
  baseUrl?: string
  /** The `fetch` to use; defaults to the global one. Pass one to add proxies, logging or tests. */
  fetch?: FetchLike
  /** Time allowed for one attempt (request and response body), in ms; 0 means no limit. Default 30000. */
  timeoutMs?: number
  /** Retry tuning: a number of retries, `false` (or 0) for none, or {@link RetryOptions}. Default 3 retries. */
  retries?: number | false | RetryOptions
  /** Called before each retry, e.g. to log it. */
  onRetry?: (event: RetryEvent) => void
  /** How `get` returns integers beyond 2^53, which a JS number cannot hold. Default `'bigint'`. See {@link BigIntMode}. */
  bigints?: BigIntMode
}

/** Per-call options every method accepts. */
export interface CallOptions {
  /** Aborts the call (and any retry wait); the promise rejects with the signal's reason. */
  signal?: AbortSignal
}

/** Options for {@link Cairn.get} and {@link Cairn.getRaw}. */
export interface GetOptions extends CallOptions {
  /**
   * The version the caller already holds (`If-None-Match`): when the entry still has it, the
   * answer is a 304 with no value, returned as `{ notModified: true, version }`.
   */
  ifNoneMatch?: string
}

/** A conditional read's answer when the entry still has the version the caller holds. */
export interface NotModified {
  notModified: true
  /** The entry's version: the one sent as `ifNoneMatch`. */
  version: string
}

/** Options for {@link Cairn.put}. */
export interface PutOptions extends CallOptions {
  /** Seconds until the key expires (integer, at least 1). Not together with `expiresAt`. */
  ttl?: number
  /** When the key expires: unix seconds or a Date (rounded up to the next second). Not together with `ttl`. */
  expiresAt?: number | Date
  /** Only write if the key's current version is this one (`If-Match`); else ConflictError `precondition_failed`. */
  ifMatch?: string
  /** `'*'`: only write if the key does not exist yet (`If-None-Match: *`); else ConflictError `precondition_failed`. */
  ifNoneMatch?: '*'
  /**
   * A JSON object stored beside the value (at most 1 KiB of JSON text), replaced by every
   * `put`: leaving it out (or `null`) stores none. Read it with `getWithMetadata`.
   */
  metadata?: Metadata | null
}

/** An entry's metadata: a JSON object of at most 1 KiB of JSON text. */
export type Metadata = Record<string, unknown>

/** Options for {@link Cairn.delete}. */
export interface DeleteOptions extends CallOptions {
  /** Only delete if the key's current version is this one (`If-Match`); else ConflictError `precondition_failed`. */
  ifMatch?: string
}

/** Options for {@link Cairn.list}. */
export interface ListOptions extends CallOptions {
  /** Only keys starting with this text. */
  prefix?: string
  /** Only keys at or after this one (UTF-8 byte order); within `prefix` when one is given. */
  start?: string
  /** Only keys before this one. */
  end?: string
  /** Keys per page, 1 to 1000; the server's default is 1000. */
  limit?: number
  /**
   * The `cursor` of the previous page, to get the next one. It carries its prefix and
   * direction: pass the same `prefix` and `reverse` with it, or none.
   */
  cursor?: string
  /** `true`: descending order (`reverse=1`); `false`: ascending, said explicitly (`reverse=0`). */
  reverse?: boolean
}

/** Options for {@link Cairn.keys}. */
export interface KeysOptions extends CallOptions {
  /** Only keys starting with this text. */
  prefix?: string
  /** Only keys at or after this one. */
  start?: string
  /** Only keys before this one. */
  end?: string
  /** Keys fetched per request, 1 to 1000. Default 1000. */
  pageSize?: number
  /** Descending order instead of ascending. */
  reverse?: boolean
}

/** What an entry listing carries besides each key and version. */
export type Include = 'values' | 'metadata'

/** Options for {@link Cairn.listEntries}. */
export interface ListEntriesOptions extends ListOptions {
  /**
   * What each entry carries besides `key`, `version` and `expiresAt`: its `value`, its
   * `metadata`, or both. Default `['values']`; an empty list is refused (TypeError).
   * With values the server's default page is 100 entries, and a page also ends after the
   * entry that takes it past 4 MiB of values.
   */
  include?: Include[]
}

/** Options for {@link Cairn.entries}. */
export interface EntriesOptions extends CallOptions {
  /** Only keys starting with this text. */
  prefix?: string
  /** Only keys at or after this one. */
  start?: string
  /** Only keys before this one. */
  end?: string
  /** What each entry carries besides `key` and `version`; default `['values']`. See {@link ListEntriesOptions.include}. */
  include?: Include[]
  /** Descending order instead of ascending. */
  reverse?: boolean
  /** Entries fetched per request, 1 to 1000; the server's default is 100 with values, 1000 without. */
  pageSize?: number
}

/** The result of a successful `put`. */
export interface PutResult {
  /** True when the key did not exist before. */
  created: boolean
  /** The new version, usable as `ifMatch`. */
  version: string
}

/**
 * A stored entry, as `get` returns it.
 * @typeParam T The value's type as the caller asserts it; nothing checks it at run time.
 */
export interface Entry<T> {
  /** The stored JSON value, parsed. */
  value: T
  /** The entry's current version (from `ETag`), usable as `ifMatch`. */
  version: string
  /** Unix seconds when the entry expires; absent when it has no TTL. */
  expiresAt?: number
}

/** A stored entry with its value as the exact JSON text the server holds, as `getRaw` returns it. */
export interface RawEntry {
  /** The value's JSON text, byte for byte as stored (insignificant whitespace aside). */
  raw: string
  /** The entry's current version (from `ETag`). */
  version: string
  /** Unix seconds when the entry expires; absent when it has no TTL. */
  expiresAt?: number
}

/** One page of keys. */
export interface ListPage {
  /** Keys in ascending UTF-8 byte order (descending with `reverse`). */
  keys: string[]
  /** Present when more keys remain: pass it as `cursor` to get the next page. */
  cursor?: string
  /**
   * The namespace's version when the page was read: watch from the first page's version
   * (`watch(ns, { since: page.version })`) to miss no change made during or after the walk.
   * Empty when an older server sent none.
   */
  version: string
}

/**
 * One entry of an entry listing.
 * @typeParam T The value's type as the caller asserts it; nothing checks it at run time.
 */
export interface ListedEntry<T = unknown> {
  /** The key. */
  key: string
  /** The entry's current version. */
  version: string
  /** Unix seconds when the entry expires; absent when it has no TTL. */
  expiresAt?: number
  /** The value, parsed as `get` parses it; present when `include` has `'values'`. */
  value?: T
  /** The metadata, `null` when it has none; present when `include` has `'metadata'`. */
  metadata?: Metadata | null
}

/** One page of entries. */
export interface EntriesPage<T = unknown> {
  /** Entries in ascending UTF-8 byte order of their keys (descending with `reverse`). */
  entries: ListedEntry<T>[]
  /** Present when more entries remain: pass it as `cursor` to get the next page. */
  cursor?: string
  /** The namespace's version when the page was read (see {@link ListPage.version}). */
  version: string
}

/**
 * A stored entry with its metadata, as `getWithMetadata` returns it.
 * @typeParam T The value's type as the caller asserts it.
 * @typeParam M The metadata's type as the caller asserts it.
 */
export interface EntryWithMetadata<T, M extends Metadata = Metadata> extends Entry<T> {
  /** The metadata stored with the last `put` (or `patch`), or null when it has none. */
  metadata: M | null
}

/**
 * An integer of any size: a number (a safe integer), a bigint, or a string of decimal digits
 * (`-?(0|[1-9][0-9]*)`). Anything else (`1.5`, `1e3`, `NaN`, a number beyond 2^53 that has
 * already lost digits) is refused before sending with an InvalidPatchError.
 */
export type IntegerLike = number | bigint | string

/** Options for {@link Cairn.patch}: one or more of `increment`, `ttl`/`expiresAt`/`persist`, `metadata`. */
export interface PatchOptions extends CallOptions {
  /** Adds this (maybe negative) integer to the stored integer; a missing key starts at 0 and is created. */
  increment?: IntegerLike
  /** New expiry: seconds from now (integer, at least 1). Not together with `expiresAt` or `persist`. */
  ttl?: number
  /** New expiry: unix seconds or a Date (rounded up). Not together with `ttl` or `persist`. */
  expiresAt?: number | Date
  /** `true`: remove the expiry. Not together with `ttl` or `expiresAt`. */
  persist?: true
  /** Replaces the metadata; `null` removes it. */
  metadata?: Metadata | null
  /** Only change the entry if its current version is this one (`If-Match`); else ConflictError `precondition_failed`. */
  ifMatch?: string
}

/** What {@link Cairn.patch} returns. */
export interface PatchResult {
  /** True when an `increment` created the key (201). */
  created: boolean
  /** The entry's new version. */
  version: string
  /**
   * The new value after an `increment`, always a bigint (whatever its size, and whatever
   * the `bigints` option says) so a counter never changes type as it grows; absent without `increment`.
   */
  value?: bigint
}

/** Options for {@link Cairn.increment}. */
export interface IncrementOptions extends CallOptions {
  /** Only increment if the key's current version is this one; else ConflictError `precondition_failed`. */
  ifMatch?: string
}

/** Options for {@link Cairn.deletePrefix}. */
export type DeletePrefixOptions = CallOptions

/** A namespace just created. */
export interface CreatedNamespace {
  /** Its name. */
  name: string
  /** When it was created (ISO 8601). */
  createdAt: string
}

/** A namespace of the account, with its size. */
export interface NamespaceInfo {
  /** Its name. */
  name: string
  /** Number of live keys. */
  keys: number
  /** Bytes of keys plus values. */
  bytes: number
  /** When it was created (ISO 8601). */
  createdAt: string
}

/** Request counts per operation. */
export interface OperationCounts {
  /** Reads. */
  get: number
  /** Writes. */
  put: number
  /** Deletes. */
  delete: number
  /** Key listings. */
  list: number
  /** Namespace calls (create, list, delete). */
  namespace: number
  /** Usage reports. */
  usage: number
  /** Changes in place (PATCH). */
  patch: number
  /** Ops run by transactions: each op counts as one request. */
  transaction: number
  /** Deletes by prefix. */
  deletePrefix: number
  /** Watches opened. */
  watch: number
  /** Commands sent to /upstash/{namespace}: one per command, also in a pipeline or multi-exec. */
  upstash: number
}

/** One UTC day of usage. */
export interface UsageDay {
  /** The UTC day, `YYYY-MM-DD`. */
  date: string
  /** Authenticated requests served, errors included; 429s are counted in `rateLimited` instead. */
  requests: number
  /** Requests per operation. */
  operations: OperationCounts
  /** 4xx and 5xx answers other than 429. */
  errors: number
  /** 429 answers. */
  rateLimited: number
  /** Request body bytes received. */
  bytesIn: number
  /** Response body bytes sent. */
  bytesOut: number
  /**
   * Watch events delivered (the `put` and `delete` events; progress and error events are not
   * counted), counted apart: outside `requests`, the rate limit and the quota.
   */
  watchEvents: number
}

/** The account's plan limits; `null` means unlimited. */
export interface PlanLimits {
  /** Plan id, e.g. `free`. */
  id: string
  /** Plan name for people. */
  name: string
  /** Requests allowed per UTC day. */
  requestsPerDay: number | null
  /** Sustained requests per second. */
  ratePerSecond: number | null
  /** Requests allowed in a burst. */
  burst: number | null
  /** Namespaces allowed. */
  maxNamespaces: number | null
  /** Storage allowed, in bytes. */
  maxStorageBytes: number | null
  /** Largest value, in bytes of JSON text. */
  maxValueBytes: number | null
}

/** What `usage` returns. */
export interface Usage {
  /** The account's plan. */
  plan: PlanLimits
  /** Today's counts so far. */
  today: UsageDay & {
    /** Requests left today; null when the plan has no daily limit. */
    quotaRemaining: number | null
  }
  /** What the account stores now. */
  storage: {
    /** Bytes of keys plus values. */
    bytes: number
    /** Live keys. */
    keys: number
    /** Per namespace. */
    namespaces: {
      /** The namespace's name. */
      name: string
      /** Its live keys. */
      keys: number
      /** Its bytes of keys plus values. */
      bytes: number
    }[]
  }
  /** The last 30 days, oldest first, today last. */
  days: UsageDay[]
  /** The 48 UTC hours ending with the current one (its counts so far), oldest first. */
  hours: UsageHour[]
  /** Each namespace the key may see: its storage now and its requests today. */
  namespaces: {
    /** The namespace's name. */
    name: string
    /** Its live keys. */
    keys: number
    /** Its bytes of keys plus values. */
    bytes: number
    /** What superseded versions and tombstones kept for history take. */
    historyBytes: number
    /** Requests addressed to it today (4xx included; not 401s or 429s). */
    today: { requests: number; operations: OperationCounts }
  }[]
}

/** One UTC hour of usage. */
export interface UsageHour {
  /** The hour's start, e.g. `2026-12-01T10:00:00Z`. */
  hour: string
  /** Requests served in the hour, counted as a day's are. */
  requests: number
  /** 4xx and 5xx answers other than 429. */
  errors: number
  /** 429 answers. */
  rateLimited: number
  /** Requests per operation. */
  operations: OperationCounts
}

/** What {@link Cairn.count} answers. */
export interface RangeCount {
  count: number
  /** Bytes of keys plus values. */
  bytes: number
  version: string
}
