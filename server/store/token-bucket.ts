// The token bucket every limiter uses, in one place, and the in-process table of them
// (TokenBuckets): the embedded store's per-account buckets, the per-address buckets for requests with wrong keys (limits.ts), and the
// arithmetic the Redis store's script repeats in Lua (cluster/record-scripts.ts BUCKET, docs/redis.md).
import { LRUCache } from 'lru-cache'
import type { Bucket } from './types.js'

/** Takes `cost` tokens from `state` (tokens < 0: a bucket not started yet, so full). */
export function takeToken(
  state: { tokens: number; refilledAt: number },
  rate: number,
  burst: number,
  now: number,
  out: Bucket,
  cost = 1,
): Bucket {
  let tokens = state.tokens
  if (tokens < 0) tokens = burst
  else {
    tokens += ((now - state.refilledAt) * rate) / 1000
    if (tokens > burst) tokens = burst
  }
  state.refilledAt = now
  out.limit = burst
  if (tokens >= cost) {
    tokens -= cost
    out.ok = true
    out.retryAfter = 0
  } else {
    out.ok = false
    out.retryAfter = Math.max(1, Math.ceil((cost - tokens) / rate))
  }
  state.tokens = tokens
  out.remaining = Math.floor(tokens)
  out.reset = Math.ceil((burst - tokens) / rate)
  return out
}

/**
 * Token buckets kept in this process, by id, at most `max` of them, least recently used
 * forgotten first: a flood of new ids cannot grow memory, and a forgotten bucket comes back
 * full, no more than a new id would have. With `idleMs` (the time a bucket takes to refill),
 * a bucket left alone that long is forgotten too, since forgetting it changes nothing. The
 * embedded store's account buckets and the per-address buckets (services/limits.ts) are these.
 */
export class TokenBuckets {
  private buckets: LRUCache<string, { tokens: number; refilledAt: number }>

  constructor(max: number, idleMs?: number) {
    this.buckets = new LRUCache({ max, ...(idleMs === undefined ? {} : { ttl: idleMs }) })
  }

  /** Takes `cost` tokens from bucket `id` (rate per second, up to burst) and fills `out`. */
  take(id: string, rate: number, burst: number, now: number, out: Bucket, cost = 1): Bucket {
    let b = this.buckets.get(id)
    if (b === undefined) {
      b = { tokens: -1, refilledAt: now }
      this.buckets.set(id, b)
    }
    return takeToken(b, rate, burst, now, out, cost)
  }

  /** Forgets the buckets idle past `idleMs`. */
  prune(): void {
    this.buckets.purgeStale()
  }

  get size(): number {
    return this.buckets.size
  }
}
