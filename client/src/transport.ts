// One HTTP call to the API: headers, timeout, the caller's AbortSignal, error mapping and
// retries. Everything above this file deals in values, everything below in fetch.
import {
  type CairnError,
  errorForResponse,
  InvalidResponseError,
  NetworkError,
  TimeoutError,
} from './errors.js'
import {
  parseRetryAfter,
  type RetryEvent,
  type RetryMode,
  type RetryPolicy,
  retryDelay,
} from './retry.js'

/** The `fetch` signature the client needs; any standard implementation fits. */
export type FetchLike = (input: string, init: RequestInit) => Promise<Response>

export interface TransportConfig {
  baseUrl: string
  apiKey: string
  fetch: FetchLike | undefined
  timeoutMs: number
  retry: RetryPolicy
  onRetry: ((event: RetryEvent) => void) | undefined
}

export interface Call {
  method: 'GET' | 'PUT' | 'PATCH' | 'POST' | 'DELETE'
  /** Path below the base URL, already encoded, starting with '/'. */
  path: string
  body?: string
  headers?: Record<string, string>
  signal?: AbortSignal
  retry: RetryMode
}

export interface Reply {
  status: number
  headers: Headers
  text: string
  /** The server's X-Request-Id, or the one sent when whatever answered gave none. */
  requestId: string
}

/**
 * An id for one call, sent as X-Request-Id: the server logs it and sends it back, and an
 * error carries it even when a proxy answered in the server's place.
 */
export function newRequestId(): string {
  const bytes = new Uint8Array(8)
  const c = (globalThis as { crypto?: { getRandomValues?(a: Uint8Array): Uint8Array } }).crypto
  if (c?.getRandomValues) c.getRandomValues(bytes)
  else for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(Math.random() * 256)
  let hex = ''
  for (const b of bytes) hex += b.toString(16).padStart(2, '0')
  return `cairn-js-${hex}`
}

/** Sends the call, retrying as its mode allows; resolves for 2xx/3xx, throws a CairnError otherwise. */
export async function send(cfg: TransportConfig, call: Call): Promise<Reply> {
  // Every attempt of one call carries the same id, so the server's log shows the retries.
  const id = call.headers?.['x-request-id'] ?? newRequestId()
  // Looked up per call, not once, so a fetch installed (or replaced by a test tool) after the
  // client was made is used.
  const doFetch = cfg.fetch ?? globalThis.fetch
  if (typeof doFetch !== 'function') {
    throw new TypeError('Cairn: this runtime has no global fetch; pass one as the `fetch` option.')
  }
  for (let attempt = 1; ; attempt++) {
    const outcome = await attemptOnce(cfg, doFetch, call, id)
    if (!('error' in outcome)) return outcome
    const delay = retryDelay(cfg.retry, call.retry, attempt, outcome.error, outcome.retryAfter)
    if (delay === undefined) throw outcome.error
    cfg.onRetry?.({ attempt, delayMs: delay, error: outcome.error })
    await sleep(delay, call.signal)
  }
}

type Outcome = Reply | { error: CairnError; retryAfter?: number }

async function attemptOnce(
  cfg: TransportConfig,
  doFetch: FetchLike,
  call: Call,
  requestId: string,
): Promise<Outcome> {
  const user = call.signal
  user?.throwIfAborted()
  const ctl = new AbortController()
  let timedOut = false
  const onAbort = () => ctl.abort(user?.reason)
  user?.addEventListener('abort', onAbort, { once: true })
  const timer =
    cfg.timeoutMs > 0
      ? setTimeout(() => {
          timedOut = true
          ctl.abort()
        }, cfg.timeoutMs)
      : undefined
  const headers: Record<string, string> = {
    accept: 'application/json',
    'x-api-key': cfg.apiKey,
    'x-request-id': requestId,
    ...call.headers,
  }
  if (call.body !== undefined) headers['content-type'] = 'application/json'
  try {
    const res = await doFetch(cfg.baseUrl + call.path, {
      method: call.method,
      headers,
      body: call.body,
      signal: ctl.signal,
      // No `credentials` option: the API ignores cookies, and Workers reject the field.
    })
    const text = await res.text()
    if (res.status < 400) {
      const id = res.headers.get('x-request-id') ?? requestId
      return { status: res.status, headers: res.headers, text, requestId: id }
    }
    return responseError(res, text, requestId)
  } catch (err) {
    if (user?.aborted) throw user.reason
    if (timedOut) {
      return {
        error: new TimeoutError({
          status: 0,
          code: 'timeout',
          message: `No response from ${cfg.baseUrl} within ${cfg.timeoutMs} ms (${call.method} ${call.path}).`,
          cause: err,
        }),
      }
    }
    return {
      error: new NetworkError({
        status: 0,
        code: 'network_error',
        message: `Could not reach ${cfg.baseUrl} (${call.method} ${call.path}): ${describe(err)}`,
        cause: err,
      }),
    }
  } finally {
    if (timer !== undefined) clearTimeout(timer)
    user?.removeEventListener('abort', onAbort)
  }
}

/** The CairnError for an error response whose body is `text`, and its `Retry-After` in seconds. */
export function responseError(
  res: Response,
  text: string,
  sentId: string,
): { error: CairnError; retryAfter?: number } {
  const requestId = res.headers.get('x-request-id') ?? sentId
  const retryAfter = parseRetryAfter(res.headers.get('retry-after'))
  let code = `http_${res.status}`
  let message = `HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ''}`
  let index: number | undefined
  try {
    const body = JSON.parse(text) as {
      error?: { code?: unknown; message?: unknown; index?: unknown }
    }
    if (typeof body?.error?.code === 'string') code = body.error.code
    if (typeof body?.error?.message === 'string') message = body.error.message
    if (Number.isSafeInteger(body?.error?.index)) index = body!.error!.index as number
  } catch {
    // Not our JSON (a proxy's HTML page, say): keep the status-derived code and message.
  }
  return {
    error: errorForResponse(res.status, code, message, requestId, retryAfter, index),
    retryAfter,
  }
}

export function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err)
  const cause = (err as { cause?: unknown }).cause
  return cause instanceof Error ? `${err.message} (${cause.message})` : err.message
}

/** Waits `ms`, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    const done = () => {
      signal?.removeEventListener('abort', stop)
      resolve()
    }
    const timer = setTimeout(done, ms)
    const stop = () => {
      clearTimeout(timer)
      reject(signal?.reason)
    }
    signal?.addEventListener('abort', stop, { once: true })
  })
}

/**
 * Parses a JSON response body the client expects (with `parse`, JSON.parse unless the caller
 * needs exact integers), or throws InvalidResponseError.
 */
export function replyJson(reply: Reply, parse: (text: string) => any = JSON.parse): any {
  try {
    return parse(reply.text)
  } catch {
    throw new InvalidResponseError({
      status: reply.status,
      code: 'invalid_response',
      message: `The server's response is not JSON: ${reply.text.slice(0, 100)}`,
      requestId: reply.requestId,
    })
  }
}
