// When to try a failed call again and how long to wait first.
import type { CairnError } from './errors.js'

/** Tuning for retries; every field is optional. */
export interface RetryOptions {
  /** Retries after the first attempt. 0 turns retrying off. Default 3. */
  limit?: number
  /** Backoff before the first retry, in ms; it doubles for each further retry, with full jitter. Default 200. */
  baseDelayMs?: number
  /** Upper bound for one backoff delay, in ms. Default 5000. */
  maxDelayMs?: number
  /** Longest `Retry-After` the client waits out, in ms; a longer one fails at once with a RateLimitError. Default 60000. */
  maxRetryAfterMs?: number
}

/** What {@link ClientOptions.onRetry} is told before each retry. */
export interface RetryEvent {
  /** The retry about to be made: 1 for the first retry. */
  attempt: number
  /** How long the client waits before it, in ms. */
  delayMs: number
  /** The failure that caused it. */
  error: CairnError
}

/**
 * Which failures a call may be retried after:
 * - `idempotent`: network errors, timeouts, 429, 502, 503, 504 (GET, unconditional PUT and DELETE);
 * - `unapplied`: only 429, which is answered before anything is done (conditional writes, namespace creation).
 *
 * A 429 `quota_exceeded` (the daily quota is used up), `spending_cap_reached` (a metered
 * plan's monthly cap is reached) or `watch_limit` (every watch the plan allows is open) is
 * never retried: waiting a few seconds does not change any of them.
 */
export type RetryMode = 'idempotent' | 'unapplied'

export type RetryPolicy = Required<RetryOptions>

/** Normalises the `retries` client option. */
export function retryPolicy(opt: number | false | RetryOptions | undefined): RetryPolicy {
  const o: RetryOptions =
    opt === false ? { limit: 0 } : typeof opt === 'number' ? { limit: opt } : (opt ?? {})
  const limit = Math.floor(o.limit ?? 3)
  return {
    // NaN would compare false with every attempt number and so never stop retrying.
    limit: Number.isNaN(limit) ? 3 : Math.max(0, limit),
    baseDelayMs: o.baseDelayMs ?? 200,
    maxDelayMs: o.maxDelayMs ?? 5000,
    maxRetryAfterMs: o.maxRetryAfterMs ?? 60_000,
  }
}

/**
 * Milliseconds to wait before retry number `attempt` (1-based) after `error`, or undefined
 * when the call must not be retried.
 */
export function retryDelay(
  policy: RetryPolicy,
  mode: RetryMode,
  attempt: number,
  error: CairnError,
  retryAfterSec: number | undefined,
): number | undefined {
  if (attempt > policy.limit) return undefined
  // Any 429 but a spent daily quota or a full set of watches: the server's `rate_limited`, its
  // limit on bad keys, or a gateway's own limiter, all of which refuse the request before it
  // does anything.
  const rateLimited =
    error.status === 429 &&
    error.code !== 'quota_exceeded' &&
    error.code !== 'spending_cap_reached' &&
    error.code !== 'watch_limit'
  const transient =
    error.status === 0 || error.status === 502 || error.status === 503 || error.status === 504
  if (!rateLimited && !(mode === 'idempotent' && transient)) return undefined
  const cap = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1))
  const backoff = Math.random() * cap
  if (retryAfterSec === undefined) return backoff
  const wait = retryAfterSec * 1000
  if (wait > policy.maxRetryAfterMs) return undefined
  // A little jitter on top so clients told the same second don't all come back at once.
  return wait + Math.random() * Math.min(policy.baseDelayMs, 1000)
}

/** Seconds from a `Retry-After` header (delta-seconds or an HTTP date). */
export function parseRetryAfter(header: string | null, now = Date.now()): number | undefined {
  if (header === null) return undefined
  const trimmed = header.trim()
  if (/^\d+$/.test(trimmed)) return Number(trimmed)
  const at = Date.parse(trimmed)
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000))
}
