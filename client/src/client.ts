// The Cairn class: one method per /v1 operation.
import { InvalidPatchError, InvalidPrefixError, NotFoundError } from './errors.js'
import { envVar } from './env.js'
import { type BigIntMode, integerText, parseJson, toBigInt } from './json.js'
import { keyPath, namespacePath, query } from './paths.js'
import { retryPolicy } from './retry.js'
import {
  type EntryAt,
  type HistoryOptions,
  type HistoryPage,
  type KeyVersion,
  type Point,
  type RestoreOptions,
  type RestoreResult,
  pointText,
} from './history.js'
import {
  type ExportOptions,
  type ImportOptions,
  type ImportResult,
  type ImportSource,
  type PortableEntry,
  type RangeOptions,
  exportBytes,
  exportEntries,
  sendImport,
} from './portable.js'
import { Transaction } from './transaction.js'
import {
  bare,
  describeValue,
  etag,
  expiresAtOf,
  invalid,
  metadataText,
  parseExact,
  rawText,
  unixSeconds,
  valueText,
  versionOf,
} from './wire.js'
import { type Reply, replyJson, send, type TransportConfig } from './transport.js'
import type {
  RangeCount,
  CallOptions,
  ClientOptions,
  CreatedNamespace,
  DeleteOptions,
  DeletePrefixOptions,
  EntriesOptions,
  EntriesPage,
  Entry,
  EntryWithMetadata,
  GetOptions,
  IncrementOptions,
  IntegerLike,
  KeysOptions,
  ListedEntry,
  ListEntriesOptions,
  ListOptions,
  ListPage,
  Metadata,
  NamespaceInfo,
  NotModified,
  PatchOptions,
  PatchResult,
  PutOptions,
  PutResult,
  RawEntry,
  Usage,
} from './types.js'
import { type WatchEvent, type WatchOptions, watchStream } from './watch.js'

/** Every item of every page, fetching the next page (after the last one's cursor) as the loop asks. */
async function* paged<P extends { cursor?: string }, T>(
  fetchPage: (cursor: string | undefined) => Promise<P>,
  items: (page: P) => T[],
): AsyncGenerator<T, void, undefined> {
  let cursor: string | undefined
  do {
    const page = await fetchPage(cursor)
    yield* items(page)
    cursor = page.cursor
  } while (cursor !== undefined)
}

/**
 * A client for one Cairn account.
 *
 * ```ts
 * const kv = new Cairn(process.env.CAIRN_API_KEY, { baseUrl: 'http://localhost:8080/v1' })
 * await kv.put('sessions', 'abc', { user: 42 }, { ttl: 3600 })
 * const hit = await kv.get<{ user: number }>('sessions', 'abc') // { value, version, expiresAt? } | null
 * ```
 */
export class Cairn {
  readonly #cfg: TransportConfig
  readonly #bigints: BigIntMode

  /**
   * Makes a client; it sends nothing until a method is called.
   * @param apiKey The account's API key (`cairn_...`). Defaults to the `CAIRN_API_KEY`
   *   environment variable where the runtime has one.
   * @param options Base URL, fetch, timeout, retries; see {@link ClientOptions}.
   * @throws TypeError when there is no API key or no base URL.
   */
  constructor(apiKey?: string, options: ClientOptions = {}) {
    const key = apiKey || envVar('CAIRN_API_KEY')
    if (!key) throw new TypeError('Cairn: an API key is required (argument or CAIRN_API_KEY).')
    const base = options.baseUrl ?? envVar('CAIRN_URL')
    if (!base) {
      throw new TypeError(
        'Cairn: a baseUrl is required (option or CAIRN_URL), e.g. http://localhost:8080/v1',
      )
    }
    this.#cfg = {
      baseUrl: normaliseBaseUrl(base),
      apiKey: key,
      fetch: options.fetch,
      timeoutMs: options.timeoutMs ?? 30_000,
      retry: retryPolicy(options.retries),
      onRetry: options.onRetry,
    }
    this.#bigints = options.bigints ?? 'bigint'
  }

  /** The base URL requests go to, e.g. `http://localhost:8080/v1`. */
  get baseUrl(): string {
    return this.#cfg.baseUrl
  }

  /**
   * Stores `value` (any JSON value, `null` included; `bigint`s are written as exact
   * integers) under `key`. Unconditional writes are retried on transient failures (the
   * same value lands either way, though `created` may then read false); conditional ones
   * (`ifMatch`, `ifNoneMatch`) only after a 429, which guarantees nothing was written.
   * `metadata` (a JSON object, at most 1 KiB of JSON text) is stored beside the value and
   * replaced by every put; leave it out to store none.
   * @throws NotFoundError when the namespace does not exist; ConflictError when a condition fails;
   *   PayloadTooLargeError; QuotaExceededError; InvalidMetadataError (also before sending, for
   *   metadata that is not an object or is too long); BadRequestError for a bad key or TTL, and,
   *   before sending, for a value JSON would change (`NaN`, `Infinity`, a `Map` or `Set`)
   *   or cannot hold (`undefined`, a function, a cycle).
   */
  async put(
    namespace: string,
    key: string,
    value: unknown,
    options: PutOptions = {},
  ): Promise<PutResult> {
    return this.#put(namespace, key, valueText(key, value), options)
  }

  /**
   * Stores `json`, which must be JSON text, as the value exactly as given: for values a JS
   * object cannot represent faithfully (long decimals, member order of integer-like names).
   * Same options, errors and retry rules as {@link Cairn.put}. Text that is not exactly one
   * JSON value (`"a","ttl":1`, two values, an empty string) is refused before sending with a
   * BadRequestError (`invalid_json`): it would otherwise rewrite the request around it.
   */
  async putRaw(
    namespace: string,
    key: string,
    json: string,
    options: PutOptions = {},
  ): Promise<PutResult> {
    return this.#put(namespace, key, rawText(key, json), options)
  }

  async #put(
    namespace: string,
    key: string,
    json: string,
    options: PutOptions,
  ): Promise<PutResult> {
    const path = `/${namespacePath(namespace)}/${keyPath(key)}`
    let body = `{"value":${json}`
    if (options.ttl !== undefined) body += `,"ttl":${JSON.stringify(options.ttl)}`
    if (options.expiresAt !== undefined) {
      body += `,"expiresAt":${JSON.stringify(unixSeconds(options.expiresAt))}`
    }
    if (options.metadata !== undefined) body += `,"metadata":${metadataText(options.metadata)}`
    body += '}'
    const headers: Record<string, string> = {}
    if (options.ifMatch !== undefined) headers['if-match'] = etag(options.ifMatch)
    if (options.ifNoneMatch !== undefined) headers['if-none-match'] = options.ifNoneMatch
    const conditional = options.ifMatch !== undefined || options.ifNoneMatch !== undefined
    const reply = await send(this.#cfg, {
      method: 'PUT',
      path,
      body,
      headers,
      signal: options.signal,
      retry: conditional ? 'unapplied' : 'idempotent',
    })
    const res = replyJson(reply)
    return {
      created: res?.created === true,
      version: String(res?.version ?? versionOf(reply) ?? ''),
    }
  }

  /**
   * Reads a key. Integers beyond 2^53 come back per the `bigints` option (default: as `bigint`).
   * With `ifNoneMatch` (a version the caller holds), an entry that still has that version is
   * not sent again: the answer is `{ notModified: true, version }`.
   * @typeParam T The value's type as you expect it; it is not checked at run time.
   * @returns `{ value, version, expiresAt? }`, or null when the key does not exist (or has expired).
   * @throws NotFoundError when the namespace does not exist.
   */
  get<T = unknown>(
    namespace: string,
    key: string,
    options: GetOptions & { ifNoneMatch: string },
  ): Promise<Entry<T> | NotModified | null>
  get<T = unknown>(
    namespace: string,
    key: string,
    options?: CallOptions & { ifNoneMatch?: undefined },
  ): Promise<Entry<T> | null>
  get<T = unknown>(
    namespace: string,
    key: string,
    options?: GetOptions,
  ): Promise<Entry<T> | NotModified | null>
  async get<T = unknown>(
    namespace: string,
    key: string,
    options: GetOptions = {},
  ): Promise<Entry<T> | NotModified | null> {
    const entry = await this.getRaw(namespace, key, options)
    if (entry === null || 'notModified' in entry) return entry
    const out: Entry<T> = {
      value: parseJson(entry.raw, this.#bigints) as T,
      version: entry.version,
    }
    if (entry.expiresAt !== undefined) out.expiresAt = entry.expiresAt
    return out
  }

  /**
   * Reads a key's value as the exact JSON text the server stores, for callers that parse it
   * themselves (a JSON library with decimal support, say). `ifNoneMatch` as for {@link Cairn.get}.
   * @returns `{ raw, version, expiresAt? }`, or null when the key does not exist.
   * @throws NotFoundError when the namespace does not exist.
   */
  getRaw(
    namespace: string,
    key: string,
    options: GetOptions & { ifNoneMatch: string },
  ): Promise<RawEntry | NotModified | null>
  getRaw(
    namespace: string,
    key: string,
    options?: CallOptions & { ifNoneMatch?: undefined },
  ): Promise<RawEntry | null>
  getRaw(
    namespace: string,
    key: string,
    options?: GetOptions,
  ): Promise<RawEntry | NotModified | null>
  async getRaw(
    namespace: string,
    key: string,
    options: GetOptions = {},
  ): Promise<RawEntry | NotModified | null> {
    const reply = await this.#read(namespace, key, false, options)
    if (reply === null) return null
    if (reply.status === 304) {
      return { notModified: true, version: versionOf(reply) ?? bare(options.ifNoneMatch ?? '') }
    }
    const out: RawEntry = { raw: rawValue(reply), version: versionOf(reply) ?? '' }
    const expires = expiresAtOf(reply)
    if (expires !== undefined) out.expiresAt = expires
    return out
  }

  /**
   * Reads a key with its metadata (`GET ?metadata=1`). The value comes back as from
   * {@link Cairn.get}; so do integers beyond 2^53 inside the metadata.
   * @typeParam T The value's type as you expect it; not checked at run time.
   * @typeParam M The metadata's type as you expect it; not checked at run time.
   * @returns `{ value, metadata, version, expiresAt? }` (`metadata` null when the entry has
   *   none), or null when the key does not exist (or has expired).
   * @throws NotFoundError when the namespace does not exist.
   */
  async getWithMetadata<T = unknown, M extends Metadata = Metadata>(
    namespace: string,
    key: string,
    options: CallOptions = {},
  ): Promise<EntryWithMetadata<T, M> | null> {
    const reply = await this.#read(namespace, key, true, options)
    if (reply === null) return null
    const res = this.#parse(reply)
    if (res === null || typeof res !== 'object' || !('value' in res)) {
      throw invalid(reply, 'a value without "value"')
    }
    const body = res as { value: unknown; metadata?: unknown }
    const out: EntryWithMetadata<T, M> = {
      value: body.value as T,
      metadata: (body.metadata ?? null) as M | null,
      version: versionOf(reply) ?? '',
    }
    const expires = expiresAtOf(reply)
    if (expires !== undefined) out.expiresAt = expires
    return out
  }

  /** GET of one key; null for a missing key. */
  async #read(
    namespace: string,
    key: string,
    metadata: boolean,
    options: GetOptions,
  ): Promise<Reply | null> {
    const path =
      `/${namespacePath(namespace)}/${keyPath(key)}` + (metadata ? query({ metadata: 1 }) : '')
    const headers =
      options.ifNoneMatch === undefined ? undefined : { 'if-none-match': etag(options.ifNoneMatch) }
    try {
      return await send(this.#cfg, {
        method: 'GET',
        path,
        headers,
        signal: options.signal,
        retry: 'idempotent',
      })
    } catch (err) {
      if (err instanceof NotFoundError && err.code === 'key_not_found') return null
      throw err
    }
  }

  /** A response body parsed exactly, integers beyond 2^53 per the `bigints` option. */
  #parse(reply: Reply): any {
    return replyJson(reply, (text) => parseJson(text, this.#bigints))
  }

  /**
   * Changes an entry in place (`PATCH`): adds to an integer value, changes the expiry
   * (`ttl`, `expiresAt`, or `persist: true` to remove it) without rewriting the value,
   * replaces the metadata (`null` removes it); one or more of these at once. Every patch is a
   * write: a new version and a watch event.
   *
   * A patch with `increment` is not repeatable, so it is retried only after a 429 (nothing was
   * applied); after a lost answer it fails with the network error, as the increment may or
   * may not have happened. Patches without `increment` and `ifMatch` are retried like an
   * unconditional put.
   * @returns `{ created, version, value? }`: `value` is the new integer after an `increment`,
   *   always a bigint; `created` is true when the increment created the key.
   * @throws NotANumberError when the stored value is not an integer; NotFoundError
   *   (`key_not_found`) for a missing key without `increment`, or a missing namespace;
   *   ConflictError when `ifMatch` fails; BadRequestError for a bad TTL; InvalidPatchError
   *   for a patch the server refuses, and before sending for an empty patch or an
   *   `increment` that is not an integer (`1.5`, `1e3`, a number past 2^53).
   */
  async patch(namespace: string, key: string, options: PatchOptions): Promise<PatchResult> {
    const path = `/${namespacePath(namespace)}/${keyPath(key)}`
    const members: string[] = []
    if (options.increment !== undefined) {
      const text = integerText(options.increment)
      if (text === undefined) {
        throw new InvalidPatchError({
          status: 400,
          code: 'invalid_patch',
          message: `increment must be an integer (a safe integer number, a bigint or a string of digits); got ${describeValue(options.increment)}.`,
        })
      }
      members.push(`"increment":${text}`)
    }
    if (options.ttl !== undefined) members.push(`"ttl":${JSON.stringify(options.ttl)}`)
    if (options.expiresAt !== undefined) {
      members.push(`"expiresAt":${JSON.stringify(unixSeconds(options.expiresAt))}`)
    }
    if (options.persist !== undefined) members.push(`"persist":${JSON.stringify(options.persist)}`)
    if (options.metadata !== undefined) members.push(`"metadata":${metadataText(options.metadata)}`)
    if (members.length === 0) {
      throw new InvalidPatchError({
        status: 400,
        code: 'invalid_patch',
        message: 'A patch needs at least one of increment, ttl, expiresAt, persist or metadata.',
      })
    }
    const headers: Record<string, string> = {}
    if (options.ifMatch !== undefined) headers['if-match'] = etag(options.ifMatch)
    const repeatable = options.increment === undefined && options.ifMatch === undefined
    const reply = await send(this.#cfg, {
      method: 'PATCH',
      path,
      body: `{${members.join(',')}}`,
      headers,
      signal: options.signal,
      retry: repeatable ? 'idempotent' : 'unapplied',
    })
    // Parsed exactly whatever the bigints option: the new value keeps every digit.
    const res = parseExact(reply)
    const out: PatchResult = {
      created: reply.status === 201,
      version: String(res?.version ?? versionOf(reply) ?? ''),
    }
    if (options.increment !== undefined) {
      const value = toBigInt(res?.value)
      if (value === undefined)
        throw invalid(reply, 'an increment\'s answer without an integer "value"')
      out.value = value
    }
    return out
  }

  /**
   * Adds `by` (default 1; may be negative; any size as a bigint or a string of digits) to the
   * integer stored under `key`, creating it from 0 when missing, and returns the new value
   * exactly, always as a bigint: `Number(await kv.increment(ns, 'hits'))` when you know it is
   * small. Exact for integers of any size; 50 concurrent increments add 50. Not retried after
   * a lost answer (see {@link Cairn.patch}).
   * @throws NotANumberError when the stored value's JSON text is not an integer (`1.0`, `"3"`);
   *   InvalidPatchError before sending when `by` is not an integer.
   */
  async increment(
    namespace: string,
    key: string,
    by: IntegerLike = 1,
    options: IncrementOptions = {},
  ): Promise<bigint> {
    const res = await this.patch(namespace, key, { ...options, increment: by })
    return res.value!
  }
  /**
   * Deletes a key. Retried on transient failures when unconditional, so a delete whose first
   * answer was lost may report false.
   * @returns true when the key was deleted, false when it did not exist.
   * @throws NotFoundError when the namespace does not exist; ConflictError when `ifMatch` fails.
   */
  async delete(namespace: string, key: string, options: DeleteOptions = {}): Promise<boolean> {
    const path = `/${namespacePath(namespace)}/${keyPath(key)}`
    const headers: Record<string, string> = {}
    if (options.ifMatch !== undefined) headers['if-match'] = etag(options.ifMatch)
    try {
      await send(this.#cfg, {
        method: 'DELETE',
        path,
        headers,
        signal: options.signal,
        retry: options.ifMatch === undefined ? 'idempotent' : 'unapplied',
      })
      return true
    } catch (err) {
      if (err instanceof NotFoundError && err.code === 'key_not_found') return false
      throw err
    }
  }

  /**
   * One page of keys, in ascending UTF-8 byte order (descending with `reverse`), with the
   * namespace's `version` when the page was read. To walk every key use {@link Cairn.keys}.
   * @throws NotFoundError when the namespace does not exist; BadRequestError for a bad limit
   *   or cursor (also for a cursor sent with a different `prefix` or `reverse` than it was made with).
   */
  async list(namespace: string, options: ListOptions = {}): Promise<ListPage> {
    const reply = await this.#list(namespace, options, undefined)
    const res = replyJson(reply)
    if (!Array.isArray(res?.keys)) throw invalid(reply, 'a key list without "keys"')
    const page: ListPage = { keys: res.keys, version: listVersion(res) }
    if (typeof res.cursor === 'string' && res.cursor !== '') page.cursor = res.cursor
    return page
  }

  async #list(
    namespace: string,
    options: ListOptions,
    include: string | undefined,
  ): Promise<Reply> {
    const path =
      `/${namespacePath(namespace)}` +
      query({
        prefix: options.prefix,
        start: options.start,
        end: options.end,
        limit: options.limit,
        cursor: options.cursor,
        include,
        // Sent as given: `reverse: false` with a cursor made in reverse is the server's to refuse.
        reverse: options.reverse === undefined ? undefined : options.reverse ? 1 : 0,
      })
    return send(this.#cfg, {
      method: 'GET',
      path,
      signal: options.signal,
      retry: 'idempotent',
    })
  }

  /**
   * Every key of the namespace (optionally under a prefix, optionally in descending order),
   * fetching page after page as the loop asks for more.
   *
   * ```ts
   * for await (const key of kv.keys('sessions', { prefix: 'user:' })) console.log(key)
   * ```
   */
  async *keys(
    namespace: string,
    options: KeysOptions = {},
  ): AsyncGenerator<string, void, undefined> {
    yield* paged(
      (cursor) =>
        this.list(namespace, {
          prefix: options.prefix,
          start: options.start,
          end: options.end,
          limit: options.pageSize,
          reverse: options.reverse,
          cursor,
          signal: options.signal,
        }),
      (page) => page.keys,
    )
  }

  /**
   * One page of entries (`GET ?include=values,metadata`): each key with its version, expiry,
   * and its value and/or metadata as `include` asks (default: values). Values are parsed as
   * {@link Cairn.get} parses them. To walk every page use {@link Cairn.entries}.
   * @throws NotFoundError when the namespace does not exist; BadRequestError for a bad limit or cursor;
   *   TypeError for an empty `include`.
   */
  async listEntries<T = unknown>(
    namespace: string,
    options: ListEntriesOptions = {},
  ): Promise<EntriesPage<T>> {
    const reply = await this.#list(namespace, options, includeParam(options.include))
    const res = this.#parse(reply)
    if (!Array.isArray(res?.entries)) throw invalid(reply, 'an entry list without "entries"')
    const entries: ListedEntry<T>[] = []
    for (const e of res.entries as Record<string, unknown>[]) {
      if (e === null || typeof e !== 'object' || typeof e.key !== 'string') {
        throw invalid(reply, 'an entry without a "key"')
      }
      const entry: ListedEntry<T> = { key: e.key, version: String(e.version ?? '') }
      if (typeof e.expiresAt === 'number') entry.expiresAt = e.expiresAt
      if ('value' in e) entry.value = e.value as T
      if ('metadata' in e) entry.metadata = (e.metadata ?? null) as Metadata | null
      entries.push(entry)
    }
    const page: EntriesPage<T> = { entries, version: listVersion(res) }
    if (typeof res.cursor === 'string' && res.cursor !== '') page.cursor = res.cursor
    return page
  }

  /**
   * Every entry of the namespace (optionally under a prefix, in either order), with values
   * and/or metadata as `include` asks (default: values), fetching page after page as the
   * loop asks for more; `break` stops it.
   *
   * ```ts
   * for await (const e of kv.entries('users', { prefix: 'u/', include: ['values', 'metadata'] })) {
   *   console.log(e.key, e.version, e.value, e.metadata)
   * }
   * ```
   */
  async *entries<T = unknown>(
    namespace: string,
    options: EntriesOptions = {},
  ): AsyncGenerator<ListedEntry<T>, void, undefined> {
    yield* paged(
      (cursor) =>
        this.listEntries<T>(namespace, {
          prefix: options.prefix,
          start: options.start,
          end: options.end,
          include: options.include,
          reverse: options.reverse,
          limit: options.pageSize,
          cursor,
          signal: options.signal,
        }),
      (page) => page.entries,
    )
  }

  /**
   * Deletes every key that begins with `prefix` (`DELETE /{ns}?prefix=`); each key deleted
   * is a write of its own, with its own version and watch event. Retried on transient
   * failures, so a call whose first answer was lost may report fewer keys than it deleted.
   * @returns How many keys were deleted.
   * @throws InvalidPrefixError before sending for an empty prefix (it would delete
   *   everything; use `deleteNamespace` for that); NotFoundError when the namespace does not exist.
   */
  async deletePrefix(
    namespace: string,
    prefix: string,
    options: DeletePrefixOptions = {},
  ): Promise<number> {
    if (typeof prefix !== 'string' || prefix === '') {
      throw new InvalidPrefixError({
        status: 400,
        code: 'invalid_prefix',
        message: 'deletePrefix needs a non-empty prefix; deleteNamespace removes every key.',
      })
    }
    const reply = await send(this.#cfg, {
      method: 'DELETE',
      path: `/${namespacePath(namespace)}${query({ prefix })}`,
      signal: options.signal,
      retry: 'idempotent',
    })
    const res = replyJson(reply)
    if (typeof res?.deleted !== 'number') throw invalid(reply, 'a prefix delete without "deleted"')
    return res.deleted
  }

  /**
   * How many live keys the namespace (or a prefix or range of it) holds, their bytes (keys
   * plus values), and the version they were counted at (`GET ?count=1`).
   */
  async count(namespace: string, options: RangeOptions = {}): Promise<RangeCount> {
    const reply = await send(this.#cfg, {
      method: 'GET',
      path: `/${namespacePath(namespace)}${query({ count: 1, prefix: options.prefix, start: options.start, end: options.end })}`,
      signal: options.signal,
      retry: 'idempotent',
    })
    const res = replyJson(reply)
    if (typeof res?.count !== 'number') throw invalid(reply, 'a count without "count"')
    return { count: res.count, bytes: res.bytes, version: String(res.version) }
  }

  /**
   * Every entry of the namespace (or a prefix or range), in key order, each as it was at one
   * version however long the loop takes (`GET ?export=1`). Throws NetworkError if the
   * download is cut short. For the raw NDJSON, see {@link Cairn.exportStream}.
   *
   * ```ts
   * for await (const e of kv.exportNamespace('users')) console.log(e.key, e.value)
   * ```
   */
  async *exportNamespace<T = unknown>(
    namespace: string,
    options: ExportOptions = {},
  ): AsyncGenerator<PortableEntry<T>, void, undefined> {
    const stream = await exportBytes(this.#cfg, namespacePath(namespace), options)
    yield* exportEntries<T>(stream, this.#bigints)
  }

  /** The export's NDJSON, byte for byte as the server sends it, as a web ReadableStream. */
  exportStream(
    namespace: string,
    options: ExportOptions = {},
  ): Promise<ReadableStream<Uint8Array>> {
    return exportBytes(this.#cfg, namespacePath(namespace), options)
  }

  /**
   * Imports entries (`POST ?import=1`) from an iterable or async iterable of entries or of
   * NDJSON text/bytes (an export's, say), or a ReadableStream of NDJSON. The server checks
   * every line before it applies any: a bad one throws BadRequestError with `line`. `replace`
   * also deletes the namespace's (or range's) keys the import does not hold. Sent again, an
   * import leaves the namespace the same.
   */
  importNamespace(
    namespace: string,
    source: ImportSource,
    options: ImportOptions = {},
  ): Promise<ImportResult> {
    return sendImport(this.#cfg, namespacePath(namespace), source, options)
  }

  /**
   * Reads a key as it was at a point (`GET /{ns}/{key}?at=`): a version, a Date or an RFC 3339
   * time. With `metadata: true` its metadata then comes too.
   * @returns `{ value, version, expiresAt?, metadata? }`, or null when the key did not exist then.
   * @throws HistoryExpiredError for a point older than the namespace's history;
   *   BadRequestError (`invalid_point`) for a time in the future, a version above the
   *   namespace's, or a malformed point; NotFoundError when the namespace does not exist.
   */
  async getAt<T = unknown>(
    namespace: string,
    key: string,
    point: Point,
    options: CallOptions & { metadata?: boolean } = {},
  ): Promise<EntryAt<T> | null> {
    const path =
      `/${namespacePath(namespace)}/${keyPath(key)}` +
      query({ at: pointText(point), metadata: options.metadata ? 1 : undefined })
    let reply: Reply
    try {
      reply = await send(this.#cfg, {
        method: 'GET',
        path,
        signal: options.signal,
        retry: 'idempotent',
      })
    } catch (err) {
      if (err instanceof NotFoundError && err.code === 'key_not_found') return null
      throw err
    }
    const res = this.#parse(reply)
    if (res === null || typeof res !== 'object' || !('value' in res))
      throw invalid(reply, 'a value without "value"')
    const out: EntryAt<T> = { value: res.value as T, version: versionOf(reply) ?? '' }
    const expires = expiresAtOf(reply)
    if (expires !== undefined) out.expiresAt = expires
    if (options.metadata) out.metadata = (res.metadata ?? null) as Metadata | null
    return out
  }

  /**
   * One page of a key's versions within the namespace's history, newest first
   * (`GET /{ns}/{key}?history=1`): each with its version, commit time, and its value (or
   * `deleted: true`). To walk them all use {@link Cairn.versions}.
   * @throws NotFoundError when the namespace does not exist; BadRequestError for a bad limit or cursor.
   */
  async history<T = unknown>(
    namespace: string,
    key: string,
    options: HistoryOptions = {},
  ): Promise<HistoryPage<T>> {
    const reply = await send(this.#cfg, {
      method: 'GET',
      path:
        `/${namespacePath(namespace)}/${keyPath(key)}` +
        query({ history: 1, limit: options.limit, cursor: options.cursor }),
      signal: options.signal,
      retry: 'idempotent',
    })
    const res = this.#parse(reply)
    if (!Array.isArray(res?.versions)) throw invalid(reply, 'a history without "versions"')
    const versions: KeyVersion<T>[] = []
    for (const v of res.versions as Record<string, unknown>[]) {
      if (v === null || typeof v !== 'object' || typeof v.at !== 'string')
        throw invalid(reply, 'a version without "at"')
      const kv: KeyVersion<T> = { version: String(v.version ?? ''), at: v.at }
      if (v.deleted === true) kv.deleted = true
      if ('value' in v) kv.value = v.value as T
      if (typeof v.expiresAt === 'number') kv.expiresAt = v.expiresAt
      if (v.metadata !== undefined && v.metadata !== null) kv.metadata = v.metadata as Metadata
      versions.push(kv)
    }
    const page: HistoryPage<T> = { versions }
    if (typeof res.cursor === 'string' && res.cursor !== '') page.cursor = res.cursor
    return page
  }

  /**
   * Every version of a key within the history, newest first, fetching page after page as the
   * loop asks for more.
   *
   * ```ts
   * for await (const v of kv.versions('users', 'u/1')) console.log(v.version, v.at, v.value)
   * ```
   */
  async *versions<T = unknown>(
    namespace: string,
    key: string,
    options: { pageSize?: number; signal?: AbortSignal } = {},
  ): AsyncGenerator<KeyVersion<T>, void, undefined> {
    yield* paged(
      (cursor) =>
        this.history<T>(namespace, key, {
          limit: options.pageSize,
          cursor,
          signal: options.signal,
        }),
      (page) => page.versions,
    )
  }

  /**
   * Puts every key of the namespace (or a prefix or range) back as it was at a point
   * (`POST /{ns}?restore=1`): changed keys get their old value, metadata and expiry, keys
   * created since are deleted, keys deleted since come back. Each is a new write, so a restore
   * can itself be undone by restoring to the version before it; keys already as they were are
   * not written. Retried on transient failures: sent again it writes only what is left.
   * @returns `{ restored, version }`: keys written, and the namespace's version after.
   * @throws HistoryExpiredError for a point older than the history; BadRequestError
   *   (`invalid_point`, `invalid_range`); AuthError for a read-only key.
   */
  async restore(namespace: string, options: RestoreOptions): Promise<RestoreResult> {
    const body: Record<string, string> = { at: pointText(options?.at) }
    for (const name of ['prefix', 'start', 'end'] as const) {
      const v = options[name]
      if (v !== undefined) body[name] = v
    }
    const reply = await send(this.#cfg, {
      method: 'POST',
      path: `/${namespacePath(namespace)}${query({ restore: 1 })}`,
      body: JSON.stringify(body),
      signal: options.signal,
      retry: 'idempotent',
    })
    const res = replyJson(reply)
    if (typeof res?.restored !== 'number') throw invalid(reply, 'a restore without "restored"')
    return { restored: res.restored, version: String(res.version) }
  }

  /**
   * Starts a transaction on one namespace: add ops with the builder's methods, then
   * `commit()` applies them all or none, in order (`POST /{ns}`).
   *
   * ```ts
   * const { results } = await kv
   *   .transaction('bank')
   *   .check('alice', aliceVersion)
   *   .increment('alice', -10)
   *   .increment('bob', 10)
   *   .commit()
   * results[1].value // alice's new balance, a bigint
   * ```
   */
  transaction(namespace: string): Transaction {
    return new Transaction(this.#cfg, this.#bigints, namespacePath(namespace))
  }

  /**
   * Watches a namespace's changes (`GET ?watch=1` as Server-Sent Events over `fetch`): an
   * async iterator of `put`, `delete` and `progress` events in version order. After a dropped
   * connection, a server restart or a `too_slow` close it reconnects by itself with back-off
   * and resumes after the last version it saw, so no change is missed or repeated. It stops
   * without an error when `signal` aborts or the loop ends (`break`, `return()`).
   *
   * ```ts
   * const page = await kv.list('jobs')
   * for await (const ev of kv.watch('jobs', { since: page.version, signal })) {
   *   if (ev.type === 'put') console.log(ev.key, ev.value)
   * }
   * ```
   * @throws (from the iteration) HistoryExpiredError when `since` is older than the history
   *   the server keeps; WatchLimitError when the plan's watches are all open; NotFoundError,
   *   AuthError and other 4xx at once; InvalidResponseError when the answer is not an event
   *   stream; the last failure after `maxReconnects` failed attempts in a row.
   */
  watch<T = unknown>(
    namespace: string,
    options: WatchOptions = {},
  ): AsyncIterableIterator<WatchEvent<T>> {
    return watchStream<T>(this.#cfg, this.#bigints, namespacePath(namespace), options)
  }

  /**
   * Creates a namespace. Retried only after a 429 (a retry after a lost answer could not tell
   * "created" from "already existed").
   * @throws BadRequestError for a bad name; ConflictError (`namespace_exists`);
   *   QuotaExceededError (`namespace_quota_exceeded`); AuthError for a read-only key.
   */
  async createNamespace(name: string, options: CallOptions = {}): Promise<CreatedNamespace> {
    namespacePath(name)
    const reply = await send(this.#cfg, {
      method: 'POST',
      path: '/namespaces',
      body: JSON.stringify({ name }),
      signal: options.signal,
      retry: 'unapplied',
    })
    const res = replyJson(reply)
    return { name: String(res?.name ?? name), createdAt: String(res?.createdAt ?? '') }
  }

  /** The account's namespaces with their key counts and sizes. */
  async namespaces(options: CallOptions = {}): Promise<NamespaceInfo[]> {
    const reply = await send(this.#cfg, {
      method: 'GET',
      path: '/namespaces',
      signal: options.signal,
      retry: 'idempotent',
    })
    const res = replyJson(reply)
    if (!Array.isArray(res?.namespaces))
      throw invalid(reply, 'a namespace list without "namespaces"')
    return res.namespaces
  }

  /**
   * Deletes a namespace and every key in it. Retried on transient failures, so a delete
   * whose first answer was lost may report false.
   * @returns true when it was deleted, false when it did not exist.
   */
  async deleteNamespace(name: string, options: CallOptions = {}): Promise<boolean> {
    const path = `/namespaces/${encodeURIComponent(namespacePath(name))}`
    try {
      await send(this.#cfg, { method: 'DELETE', path, signal: options.signal, retry: 'idempotent' })
      return true
    } catch (err) {
      if (err instanceof NotFoundError && err.code === 'namespace_not_found') return false
      throw err
    }
  }

  /** The account's plan, today's counts, storage and the last 30 days. */
  async usage(options: CallOptions = {}): Promise<Usage> {
    const reply = await send(this.#cfg, {
      method: 'GET',
      path: '/usage',
      signal: options.signal,
      retry: 'idempotent',
    })
    return replyJson(reply) as Usage
  }
}

function normaliseBaseUrl(base: string): string {
  let url: URL
  try {
    url = new URL(base)
  } catch {
    throw new TypeError(`Cairn: baseUrl ${JSON.stringify(base)} is not an absolute URL.`)
  }
  if (url.pathname === '/' || url.pathname === '') url.pathname = '/v1'
  url.search = ''
  url.hash = ''
  return url.toString().replace(/\/+$/, '')
}

/** The JSON text of the `value` member of a GET body (`{"value": ...}` and nothing else). */
function rawValue(reply: Reply): string {
  const m = /^\s*\{\s*"value"\s*:([\s\S]*)\}\s*$/.exec(reply.text)
  if (m) return m[1]!.trim()
  const res = replyJson(reply)
  if (res === null || typeof res !== 'object' || !('value' in res)) {
    throw invalid(reply, 'a value without "value"')
  }
  return JSON.stringify(res.value)
}

function listVersion(res: { version?: unknown }): string {
  return typeof res.version === 'string' || typeof res.version === 'number'
    ? String(res.version)
    : ''
}

function includeParam(include: readonly string[] | undefined): string {
  if (include === undefined) return 'values'
  if (!Array.isArray(include) || include.length === 0) {
    throw new TypeError("Cairn: include lists 'values', 'metadata' or both.")
  }
  return [...new Set(include)].join(',')
}
