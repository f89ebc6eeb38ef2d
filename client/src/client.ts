// The Cairn class: one method per /v1 operation.
import { BadRequestError, InvalidResponseError, NotFoundError } from './errors.js'
import { envVar } from './env.js'
import { type BigIntMode, parseJson, stringifyJson } from './json.js'
import { jsonTextError } from './json-text.js'
import { keyPath, namespacePath, query } from './paths.js'
import { retryPolicy } from './retry.js'
import { type Reply, replyJson, send, type TransportConfig } from './transport.js'
import type {
  CallOptions,
  ClientOptions,
  CreatedNamespace,
  DeleteOptions,
  Entry,
  KeysOptions,
  ListOptions,
  ListPage,
  NamespaceInfo,
  PutOptions,
  PutResult,
  RawEntry,
  Usage,
} from './types.js'

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
   * @throws NotFoundError when the namespace does not exist; ConflictError when a condition fails;
   *   PayloadTooLargeError; QuotaExceededError; BadRequestError for a bad key or TTL, and,
   *   before sending, for a value JSON would change (`NaN`, `Infinity`, a `Map` or `Set`)
   *   or cannot hold (`undefined`, a function, a cycle).
   */
  async put(
    namespace: string,
    key: string,
    value: unknown,
    options: PutOptions = {},
  ): Promise<PutResult> {
    let json: string | undefined
    try {
      json = stringifyJson(value)
    } catch (err) {
      throw new BadRequestError({
        status: 400,
        code: 'invalid_json',
        message: `The value for key ${JSON.stringify(key)} cannot be stored as JSON: ${(err as Error).message}.`,
        cause: err,
      })
    }
    if (json === undefined) {
      throw new BadRequestError({
        status: 400,
        code: 'missing_value',
        message: `The value for key ${JSON.stringify(key)} cannot be written as JSON (it is ${typeof value}).`,
      })
    }
    return this.#put(namespace, key, json, options)
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
    const at = typeof json === 'string' ? jsonTextError(json) : 0
    if (at >= 0) {
      throw new BadRequestError({
        status: 400,
        code: 'invalid_json',
        message: `putRaw takes exactly one JSON value as text; the text for key ${JSON.stringify(key)} is not one (at position ${at}).`,
      })
    }
    return this.#put(namespace, key, json, options)
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
      const at =
        options.expiresAt instanceof Date
          ? Math.ceil(options.expiresAt.getTime() / 1000)
          : options.expiresAt
      body += `,"expiresAt":${JSON.stringify(at)}`
    }
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
   * @typeParam T The value's type as you expect it; it is not checked at run time.
   * @returns `{ value, version, expiresAt? }`, or null when the key does not exist (or has expired).
   * @throws NotFoundError when the namespace does not exist.
   */
  async get<T = unknown>(
    namespace: string,
    key: string,
    options: CallOptions = {},
  ): Promise<Entry<T> | null> {
    const entry = await this.getRaw(namespace, key, options)
    if (entry === null) return null
    const out: Entry<T> = {
      value: parseJson(entry.raw, this.#bigints) as T,
      version: entry.version,
    }
    if (entry.expiresAt !== undefined) out.expiresAt = entry.expiresAt
    return out
  }

  /**
   * Reads a key's value as the exact JSON text the server stores, for callers that parse it
   * themselves (a JSON library with decimal support, say).
   * @returns `{ raw, version, expiresAt? }`, or null when the key does not exist.
   * @throws NotFoundError when the namespace does not exist.
   */
  async getRaw(
    namespace: string,
    key: string,
    options: CallOptions = {},
  ): Promise<RawEntry | null> {
    const path = `/${namespacePath(namespace)}/${keyPath(key)}`
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
    const out: RawEntry = { raw: rawValue(reply), version: versionOf(reply) ?? '' }
    const expires = reply.headers.get('x-expires-at')
    if (expires !== null && expires.trim() !== '' && Number.isFinite(Number(expires))) {
      out.expiresAt = Number(expires)
    }
    return out
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
   * One page of keys, in ascending UTF-8 byte order. To walk every key use {@link Cairn.keys}.
   * @throws NotFoundError when the namespace does not exist; BadRequestError for a bad limit or cursor.
   */
  async list(namespace: string, options: ListOptions = {}): Promise<ListPage> {
    const path =
      `/${namespacePath(namespace)}` +
      query({ prefix: options.prefix, limit: options.limit, cursor: options.cursor })
    const reply = await send(this.#cfg, {
      method: 'GET',
      path,
      signal: options.signal,
      retry: 'idempotent',
    })
    const res = replyJson(reply)
    if (!Array.isArray(res?.keys)) throw invalid(reply, 'a key list without "keys"')
    const page: ListPage = { keys: res.keys }
    if (typeof res.cursor === 'string' && res.cursor !== '') page.cursor = res.cursor
    return page
  }

  /**
   * Every key of the namespace (optionally under a prefix), fetching page after page as the
   * loop asks for more.
   *
   * ```ts
   * for await (const key of kv.keys('sessions', { prefix: 'user:' })) console.log(key)
   * ```
   */
  async *keys(
    namespace: string,
    options: KeysOptions = {},
  ): AsyncGenerator<string, void, undefined> {
    let cursor: string | undefined
    do {
      const page = await this.list(namespace, {
        prefix: options.prefix,
        limit: options.pageSize,
        cursor,
        signal: options.signal,
      })
      yield* page.keys
      cursor = page.cursor
    } while (cursor !== undefined)
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

/** Quotes a version for If-Match, leaving an already quoted ETag alone. */
function etag(version: string): string {
  return /^(W\/)?".*"$/.test(version) ? version : `"${version}"`
}

function versionOf(reply: Reply): string | undefined {
  const tag = reply.headers.get('etag')
  if (tag === null) return undefined
  return tag.replace(/^W\//, '').replace(/^"(.*)"$/, '$1')
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

function invalid(reply: Reply, what: string): InvalidResponseError {
  return new InvalidResponseError({
    status: reply.status,
    code: 'invalid_response',
    message: `The server sent ${what}.`,
    requestId: reply.requestId,
  })
}
