// Watching a namespace: Server-Sent Events read from a `fetch` response body (so it runs
// wherever fetch streams: Node 18+, browsers, Deno, Bun, Workers), resumed after the last
// version seen whenever the connection drops, with back-off.
import {
  CairnError,
  errorForResponse,
  InvalidResponseError,
  NetworkError,
  TimeoutError,
} from './errors.js'
import { type BigIntMode, parseJson } from './json.js'
import { query } from './paths.js'
import { SseParser } from './sse.js'
import { describe, newRequestId, responseError, sleep, type TransportConfig } from './transport.js'
import type { CallOptions, Metadata } from './types.js'

/**
 * One change (or progress mark) of a watched namespace.
 * - `put`: `key` now holds `value` (parsed as `get` parses it), at `version`;
 * - `delete`: `key` was deleted, or expired, at `version`;
 * - `progress`: every change up to `version` has been delivered (sent when the watch opens,
 *   and after 15 s without a change).
 * @typeParam T The values' type as the caller asserts it; nothing checks it at run time.
 */
export type WatchEvent<T = unknown> =
  | {
      type: 'put'
      key: string
      version: string
      value: T
      /** Unix seconds when the entry expires; absent when it has no TTL. */
      expiresAt?: number
      /** The entry's metadata; absent when it has none. */
      metadata?: Metadata
    }
  | { type: 'delete'; key: string; version: string }
  | { type: 'progress'; version: string }

/** What {@link WatchOptions.onReconnect} is told before each reconnection. */
export interface ReconnectEvent {
  /** Failed connections in a row, this one included: 1 after a stream that was working. */
  attempt: number
  /** How long the watch waits before reconnecting, in ms. */
  delayMs: number
  /** Why: a NetworkError (dropped, refused, no heartbeat), TooSlowError, ServerError or RateLimitError. */
  error: CairnError
  /** The version the watch resumes after; undefined when it never learnt one. */
  since: string | undefined
}

/** Options for {@link Cairn.watch}. */
export interface WatchOptions extends CallOptions {
  /** Only keys starting with this text. */
  prefix?: string
  /**
   * Deliver every change after this version (e.g. a listing's `version`), then live ones.
   * Without it the watch starts at the namespace's current version. A version older than
   * the server's history fails with HistoryExpiredError.
   */
  since?: string
  /**
   * Failed connections in a row after which the watch gives up and throws the last failure.
   * Default: never give up (like EventSource), with back-off between attempts.
   */
  maxReconnects?: number
  /**
   * A connection that brings nothing (not even the server's 15 s progress heartbeat) for this
   * long is taken as dead and replaced, in ms; 0 turns it off. Default 45000.
   */
  idleTimeoutMs?: number
  /** Called before each reconnection, e.g. to log it. */
  onReconnect?: (event: ReconnectEvent) => void
}

/** Statuses of codes that can arrive inside an open stream, for their errors' `status`. */
const STREAM_CODES: Record<string, number> = {
  unauthorized: 401,
  forbidden: 403,
  namespace_not_found: 404,
  history_expired: 410,
  watch_limit: 429,
  rate_limited: 429,
  quota_exceeded: 429,
  spending_cap_reached: 429,
  internal_error: 500,
  unavailable: 503,
}

/**
 * The watch's iterator. `return()` (what `break` in a `for await` calls) and the caller's
 * signal both end it at once, a pending `next()` included, which then resolves as done.
 */
export function watchStream<T>(
  cfg: TransportConfig,
  bigints: BigIntMode,
  namespace: string,
  options: WatchOptions,
): AsyncIterableIterator<WatchEvent<T>> {
  const stop = new AbortController()
  const user = options.signal
  const onAbort = () => stop.abort(user?.reason)
  if (user?.aborted) stop.abort(user.reason)
  else user?.addEventListener('abort', onAbort, { once: true })
  const cleanup = () => user?.removeEventListener('abort', onAbort)
  const gen = run<T>(cfg, bigints, namespace, options, stop.signal)
  const iterator: AsyncIterableIterator<WatchEvent<T>> = {
    async next() {
      try {
        const r = await gen.next()
        if (r.done) cleanup()
        return r
      } catch (err) {
        cleanup()
        throw err
      }
    },
    async return() {
      stop.abort()
      cleanup()
      await gen.return(undefined)
      return { done: true, value: undefined }
    },
    [Symbol.asyncIterator]() {
      return this
    },
  }
  return iterator
}

/** Thrown inside the loop to reconnect; carries the server's Retry-After when it sent one. */
class Reconnect {
  constructor(
    readonly error: CairnError,
    readonly retryAfterSec?: number,
  ) {}
}

async function* run<T>(
  cfg: TransportConfig,
  bigints: BigIntMode,
  namespace: string,
  options: WatchOptions,
  stop: AbortSignal,
): AsyncGenerator<WatchEvent<T>, void, undefined> {
  const idleMs = options.idleTimeoutMs ?? 45_000
  const maxReconnects = options.maxReconnects ?? Number.POSITIVE_INFINITY
  /** The version the watch has delivered everything up to: where a reconnection resumes. */
  let last: string | undefined = options.since
  /**
   * The version of the last event handed out: the progress mark a reconnection opens with is
   * not repeated when it is at or below it. Later marks on a stream are the server's
   * heartbeat after 15 s without a change, and are handed out as they come.
   */
  let shown: string | undefined
  let failures = 0
  let serverRetryMs: number | undefined
  const doFetch = cfg.fetch ?? globalThis.fetch
  if (typeof doFetch !== 'function') {
    throw new TypeError('Cairn: this runtime has no global fetch; pass one as the `fetch` option.')
  }

  for (;;) {
    if (stop.aborted) return
    const conn = new AbortController()
    const onStop = () => conn.abort()
    stop.addEventListener('abort', onStop, { once: true })
    let timedOut = false
    let idled = false
    let timer: ReturnType<typeof setTimeout> | undefined
    const arm = (ms: number, onFire: () => void) => {
      if (timer !== undefined) clearTimeout(timer)
      timer = ms > 0 ? setTimeout(onFire, ms) : undefined
    }
    const path = `/${namespace}` + query({ watch: 1, prefix: options.prefix, since: last })
    const requestId = newRequestId()
    let reconnect: Reconnect
    try {
      arm(cfg.timeoutMs, () => {
        timedOut = true
        conn.abort()
      })
      const res = await doFetch(cfg.baseUrl + path, {
        method: 'GET',
        // No Last-Event-ID or Cache-Control: `since` in the query says the same, and extra
        // headers would need the server's CORS preflight to allow them.
        headers: {
          accept: 'text/event-stream',
          'x-api-key': cfg.apiKey,
          'x-request-id': requestId,
        },
        signal: conn.signal,
      })
      if (res.status >= 400) {
        const { error, retryAfter } = responseError(res, await res.text(), requestId)
        if (!retryable(error)) throw error
        throw new Reconnect(error, retryAfter)
      }
      const type = res.headers.get('content-type') ?? ''
      if (res.status !== 200 || !/^text\/event-stream\b/i.test(type) || res.body === null) {
        await res.body?.cancel().catch(() => {})
        throw new InvalidResponseError({
          status: res.status,
          code: 'invalid_response',
          message: `The server answered a watch with ${res.status} ${type || 'no content type'}, not an event stream.`,
          requestId: res.headers.get('x-request-id') ?? requestId,
        })
      }
      const streamId = res.headers.get('x-request-id') ?? requestId
      const reader = res.body.getReader()
      const decoder = new TextDecoder()
      const parser = new SseParser()
      let opening = true
      const idle = () => {
        idled = true
        conn.abort()
      }
      try {
        for (;;) {
          arm(idleMs, idle)
          const { done, value } = await reader.read()
          // The idle clock runs only while waiting for the server, not while the loop body runs.
          if (timer !== undefined) clearTimeout(timer)
          if (done) break
          const messages = parser.push(decoder.decode(value, { stream: true }))
          if (parser.retryMs !== undefined) serverRetryMs = parser.retryMs
          for (const msg of messages) {
            if (msg.event === 'error') {
              const err = streamError(msg.data, streamId)
              if (!retryable(err)) throw err
              throw new Reconnect(err)
            }
            if (msg.event !== 'put' && msg.event !== 'delete' && msg.event !== 'progress') continue
            let data: any
            try {
              data = parseJson(msg.data, bigints)
            } catch {
              throw new InvalidResponseError({
                status: res.status,
                code: 'invalid_response',
                message: `A watch event's data is not JSON: ${msg.data.slice(0, 100)}`,
                requestId: streamId,
              })
            }
            const version = String(data?.version ?? msg.id)
            // Whatever arrives shows the stream works: the next failure starts back-off anew.
            failures = 0
            const first = opening
            opening = false
            if (msg.event === 'progress') {
              if (last === undefined || newer(version, last)) last = version
              if (first && shown !== undefined && !newer(version, shown)) continue
              if (shown === undefined || newer(version, shown)) shown = version
              yield { type: 'progress', version }
              continue
            }
            // Resuming gives every change after `last` exactly once; this only guards that.
            if (last !== undefined && !newer(version, last)) continue
            last = version
            shown = version
            if (msg.event === 'delete') {
              yield { type: 'delete', key: String(data.key), version }
            } else {
              const ev: WatchEvent<T> = {
                type: 'put',
                key: String(data.key),
                version,
                value: data.value as T,
              }
              if (typeof data.expiresAt === 'number') ev.expiresAt = data.expiresAt
              if (data.metadata !== undefined && data.metadata !== null) ev.metadata = data.metadata
              yield ev
            }
          }
        }
      } finally {
        if (timer !== undefined) clearTimeout(timer)
        reader.cancel().catch(() => {})
      }
      reconnect = new Reconnect(
        new NetworkError({
          status: 0,
          code: 'network_error',
          message: `The server ended the watch stream of ${namespace}.`,
          requestId: streamId,
        }),
      )
    } catch (err) {
      if (stop.aborted) return
      if (err instanceof Reconnect) reconnect = err
      else if (err instanceof CairnError) throw err
      else if (timedOut || idled) {
        reconnect = new Reconnect(
          new TimeoutError({
            status: 0,
            code: 'timeout',
            message: timedOut
              ? `No answer to the watch of ${namespace} within ${cfg.timeoutMs} ms.`
              : `Nothing arrived on the watch of ${namespace} for ${idleMs} ms (not even a heartbeat).`,
            cause: err,
          }),
        )
      } else {
        // fetch and stream reads fail (with a TypeError in most runtimes) when the connection breaks.
        reconnect = new Reconnect(networkError(cfg, namespace, err))
      }
    } finally {
      if (timer !== undefined) clearTimeout(timer)
      stop.removeEventListener('abort', onStop)
      conn.abort()
    }

    failures++
    if (failures > maxReconnects) throw reconnect.error
    const cap = Math.min(cfg.retry.maxDelayMs, cfg.retry.baseDelayMs * 2 ** (failures - 1))
    let delayMs = Math.max(Math.random() * cap, serverRetryMs ?? 0)
    if (reconnect.retryAfterSec !== undefined) {
      delayMs = Math.max(delayMs, reconnect.retryAfterSec * 1000)
    }
    options.onReconnect?.({ attempt: failures, delayMs, error: reconnect.error, since: last })
    try {
      await sleep(delayMs, stop)
    } catch {
      return
    }
  }
}

/** Failures a watch outlives: a lost connection, a gateway's or a busy server's 5xx, a short rate limit, `too_slow`. */
function retryable(err: CairnError): boolean {
  if (err.code === 'too_slow') return true
  if (err.status === 0 || err.status === 502 || err.status === 503 || err.status === 504)
    return true
  return err.status === 429 && err.code === 'rate_limited'
}

/** The error an `event: error` carries (`{"code", "message"?}`). */
function streamError(data: string, requestId: string): CairnError {
  let code = 'stream_error'
  let message = 'The server ended the watch with an error.'
  try {
    const body = JSON.parse(data) as { code?: unknown; message?: unknown; error?: any }
    const e = body?.error && typeof body.error === 'object' ? body.error : body
    if (typeof e?.code === 'string') code = e.code
    if (typeof e?.message === 'string') message = e.message
    else if (code === 'too_slow') message = 'The watch fell behind the changes and was closed.'
  } catch {
    // Keep the generic code and message.
  }
  return errorForResponse(STREAM_CODES[code] ?? 200, code, message, requestId, undefined)
}

function networkError(cfg: TransportConfig, namespace: string, err: unknown): NetworkError {
  return new NetworkError({
    status: 0,
    code: 'network_error',
    message: `The watch of ${namespace} at ${cfg.baseUrl} lost its connection: ${describe(err)}`,
    cause: err,
  })
}

/** Whether version `a` comes after `b`: decimal digits compare as integers. */
function newer(a: string, b: string): boolean {
  if (/^[0-9]+$/.test(a) && /^[0-9]+$/.test(b)) return BigInt(a) > BigInt(b)
  return a !== b
}
