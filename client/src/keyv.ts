// cairn-client/keyv: a Keyv 5 store over one Cairn namespace. Keyv hands the store keys
// already prefixed with its own namespace (`keyv:foo`) and values already serialized (a
// string), or the raw `{ value, expires }` object when its serializer is off; both are kept
// as JSON values, so they come back exactly as they went in.
import type { KeyvStoreAdapter, StoredData } from 'keyv'
import { Cairn } from './client.js'
import { Events } from './events.js'
import { MAX_TRANSACTION_OPS, type Transaction, type TxResult } from './transaction.js'
import type { ClientOptions, EntriesPage } from './types.js'

/** Options of {@link KeyvCairn}. */
export interface KeyvCairnOptions
  extends Pick<ClientOptions, 'fetch' | 'timeoutMs' | 'retries' | 'onRetry'> {
  /** The server, e.g. `http://localhost:8080` (`/v1` is added). Default: `CAIRN_URL`. */
  url?: string
  /** The API key. Default: `CAIRN_API_KEY`. */
  apiKey?: string
  /** The Cairn namespace the store keeps its keys in; it must exist. */
  namespace: string
  /** Throw failures from the store's methods as well as emitting them. Default false. */
  throwOnErrors?: boolean
}

/** What the store shows Keyv (`store.opts`); the API key is not among them. */
export interface KeyvCairnProperties {
  dialect: 'cairn'
  /** The API's base URL. */
  url: string
  /** The Cairn namespace. */
  namespace: string
  throwOnErrors: boolean
  /** Used by `has()` to read a stored entry's expiry; JSON.parse when unset. */
  deserialize?: (text: string) => unknown
  [option: string]: unknown
}

/** Server-side TTLs are whole seconds up to 100 years; Keyv keeps the exact expiry itself. */
const MAX_TTL_SECONDS = 100 * 365 * 86400

/**
 * A Keyv store that keeps its entries in a Cairn namespace.
 *
 * ```ts
 * import Keyv from 'keyv'
 * import { KeyvCairn } from 'cairn-client/keyv'
 * const keyv = new Keyv({ store: new KeyvCairn({ url, apiKey, namespace: 'cache' }) })
 * ```
 *
 * Failures are emitted as `'error'` (Keyv passes them on to its own listeners) and answered
 * as a miss or `false`; with `throwOnErrors` they are thrown too. The iterator throws.
 */
export class KeyvCairn extends Events implements KeyvStoreAdapter {
  /** Keyv's namespace, set by Keyv; `clear()` and `iterator()` keep to it. */
  namespace?: string
  opts: KeyvCairnProperties
  readonly #kv: Cairn
  readonly #ns: string
  /** One controller per call in flight, for disconnect(); a call removes its own when done. */
  readonly #inFlight = new Set<AbortController>()

  constructor(options: KeyvCairnOptions) {
    super()
    if (!options || typeof options.namespace !== 'string' || options.namespace === '') {
      throw new TypeError('KeyvCairn: a Cairn namespace is required (options.namespace).')
    }
    this.#kv = new Cairn(options.apiKey, {
      baseUrl: options.url,
      fetch: options.fetch,
      timeoutMs: options.timeoutMs,
      retries: options.retries,
      onRetry: options.onRetry,
      bigints: 'bigint',
    })
    this.#ns = options.namespace
    this.opts = {
      dialect: 'cairn',
      url: this.#kv.baseUrl,
      namespace: options.namespace,
      throwOnErrors: options.throwOnErrors === true,
    }
  }

  /** The value stored under `key`, or undefined. */
  async get<Value>(key: string): Promise<StoredData<Value> | undefined> {
    return this.#run(undefined, async (signal) => {
      const hit = await this.#kv.get<StoredData<Value>>(this.#ns, key, { signal })
      return hit === null ? undefined : hit.value
    })
  }

  /** Values of `keys` in order (undefined where missing), read in transactions of up to 1,000. */
  async getMany<Value>(keys: string[]): Promise<Array<StoredData<Value | undefined>>> {
    return this.#run(
      keys.map(() => undefined),
      async (signal) => {
        const out: Array<StoredData<Value | undefined>> = []
        for (const part of chunks(keys)) {
          const tx: Transaction<TxResult[]> = this.#kv.transaction(this.#ns)
          for (const key of part) tx.get(key)
          const { results } = await tx.commit({ signal })
          for (const r of results) {
            out.push('found' in r && r.found ? (r.value as StoredData<Value>) : undefined)
          }
        }
        return out
      },
    )
  }

  /**
   * Stores `value` under `key`; `ttl` in milliseconds becomes a server TTL rounded up to
   * whole seconds (Keyv itself checks the exact expiry it stored with the value).
   */
  async set(key: string, value: unknown, ttl?: number): Promise<boolean> {
    return this.#run(false, async (signal) => {
      await this.#kv.put(this.#ns, key, value, { ttl: ttlSeconds(ttl), signal })
      return true
    })
  }

  /**
   * Stores every entry, in transactions of up to 1,000 (each all or nothing); when a key
   * comes twice the last entry wins. One result per entry: Keyv's adapter type says `void`,
   * but `keyv.setMany()` resolves to what this resolves to, as its `boolean[]`.
   */
  async setMany(entries: Array<{ key: string; value: unknown; ttl?: number }>): Promise<any> {
    return this.#run(
      entries.map(() => false),
      async (signal) => {
        const last = new Map<string, { value: unknown; ttl?: number }>()
        for (const e of entries) {
          last.delete(e.key)
          last.set(e.key, e)
        }
        for (const part of chunks([...last])) {
          const tx: Transaction<TxResult[]> = this.#kv.transaction(this.#ns)
          for (const [key, e] of part) tx.put(key, e.value, { ttl: ttlSeconds(e.ttl) })
          await tx.commit({ signal })
        }
        return entries.map(() => true)
      },
    )
  }

  /** True when `key` was there and is now deleted. */
  async delete(key: string): Promise<boolean> {
    return this.#run(false, (signal) => this.#kv.delete(this.#ns, key, { signal }))
  }

  /** Deletes `keys` in transactions of up to 1,000; true when at least one was there. */
  async deleteMany(keys: string[]): Promise<boolean> {
    return this.#run(false, async (signal) => {
      let any = false
      for (const part of chunks([...new Set(keys)])) {
        any = (await this.#deleteAll(part, signal)) || any
      }
      return any
    })
  }

  /**
   * Deletes every key of Keyv's namespace (`namespace:` prefix), and only those; without a
   * Keyv namespace, every key of the Cairn namespace.
   */
  async clear(): Promise<void> {
    return this.#run(undefined, async (signal) => {
      if (this.namespace) {
        await this.#kv.deletePrefix(this.#ns, `${this.namespace}:`, { signal })
        return
      }
      let cursor: string | undefined
      do {
        const page = await this.#kv.list(this.#ns, { cursor, signal })
        if (page.keys.length > 0) await this.#deleteAll(page.keys, signal)
        cursor = page.cursor
      } while (cursor !== undefined)
    })
  }

  /**
   * True when `key` holds a value whose Keyv expiry (if it has one) has not passed: the
   * server's TTL is rounded up to a second, Keyv's is exact.
   */
  async has(key: string): Promise<boolean> {
    return this.#run(false, async (signal) => {
      const hit = await this.#kv.get(this.#ns, key, { signal })
      if (hit === null) return false
      return !(await keyvExpired(hit.value, this.opts.deserialize))
    })
  }

  /**
   * Every `[key, value]` of the Keyv namespace given (all keys without one), page by page
   * from the entry listing; keys keep their `namespace:` prefix, as Keyv's own iterator expects.
   */
  async *iterator<Value = unknown>(
    namespace?: string,
  ): AsyncGenerator<[string, Awaited<Value> | undefined], void> {
    const prefix = namespace ? `${namespace}:` : undefined
    let cursor: string | undefined
    do {
      // Registered only while a page is being read: an iterator left unfinished holds nothing.
      const ctl = this.#begin()
      let page: EntriesPage<Awaited<Value>>
      try {
        page = await this.#kv.listEntries<Awaited<Value>>(this.#ns, {
          prefix,
          cursor,
          signal: ctl.signal,
        })
      } catch (err) {
        this.emit('error', err)
        throw err
      } finally {
        this.#inFlight.delete(ctl)
      }
      for (const e of page.entries) yield [e.key, e.value]
      cursor = page.cursor
    } while (cursor !== undefined)
  }

  /** Aborts requests in flight (they fail as errors); later calls work as before. */
  async disconnect(): Promise<void> {
    const reason = new Error('KeyvCairn: disconnected.')
    for (const ctl of this.#inFlight) ctl.abort(reason)
    this.#inFlight.clear()
  }

  // A signal per call rather than one shared by all: many concurrent calls on one signal
  // would pile up listeners on it (and Node warns past ten).
  #begin(): AbortController {
    const ctl = new AbortController()
    this.#inFlight.add(ctl)
    return ctl
  }

  async #deleteAll(keys: string[], signal: AbortSignal): Promise<boolean> {
    const tx: Transaction<TxResult[]> = this.#kv.transaction(this.#ns)
    for (const key of keys) tx.delete(key)
    const { results } = await tx.commit({ signal })
    return results.some((r) => 'deleted' in r && r.deleted)
  }

  async #run<T>(fallback: T, call: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const ctl = this.#begin()
    try {
      return await call(ctl.signal)
    } catch (err) {
      this.emit('error', err)
      if (this.opts.throwOnErrors) throw err
      return fallback
    } finally {
      this.#inFlight.delete(ctl)
    }
  }
}

export default KeyvCairn

function ttlSeconds(ms: number | undefined): number | undefined {
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms <= 0) return undefined
  const s = Math.ceil(ms / 1000)
  return s > MAX_TTL_SECONDS ? undefined : s
}

function* chunks<T>(items: T[]): Generator<T[]> {
  for (let i = 0; i < items.length; i += MAX_TRANSACTION_OPS) {
    yield items.slice(i, i + MAX_TRANSACTION_OPS)
  }
}

/** Whether a stored Keyv entry (serialized text or the raw object) carries a passed expiry. */
async function keyvExpired(
  stored: unknown,
  deserialize: ((text: string) => unknown) | undefined,
): Promise<boolean> {
  let data: unknown = stored
  if (typeof stored === 'string') {
    try {
      data = await (deserialize ?? JSON.parse)(stored)
    } catch {
      return false
    }
  }
  const expires = (data as { expires?: unknown } | null)?.expires
  return typeof expires === 'number' && Date.now() > expires
}
