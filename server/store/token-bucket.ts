// The token bucket every limiter uses, in one place: the embedded store's per-account
// buckets, the per-address buckets for requests with wrong keys (limits.ts), and the
// arithmetic the Redis store's script repeats in Lua (cluster/record-scripts.ts BUCKET, docs/redis.md).
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
