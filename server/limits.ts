// Rate limits. Each account has a token bucket (all its keys share it) filled at the plan's
// rate up to its burst; each client address has a small bucket for requests with missing or
// wrong keys, so guessing keys is slow and cheap to refuse.
import type { Account } from './accounts.js'
import type { Plan } from './plans.js'

const DAY_MS = 86_400_000
const BAD_KEY_BURST = 20
const BAD_KEY_PER_SECOND = 2
const ADDRESSES_MAX = 100_000

/** The outcome of the last `take`, reused rather than allocated per request. */
export interface Bucket {
  ok: boolean
  limit: number
  remaining: number
  /** Seconds until the bucket is full. */
  reset: number
  /** Whole seconds until one token is back (when refused). */
  retryAfter: number
}

export function takeToken(
  state: { tokens: number; refilledAt: number },
  rate: number,
  burst: number,
  now: number,
  out: Bucket,
): Bucket {
  let tokens = state.tokens
  if (tokens < 0) tokens = burst
  else {
    tokens += ((now - state.refilledAt) * rate) / 1000
    if (tokens > burst) tokens = burst
  }
  state.refilledAt = now
  out.limit = burst
  if (tokens >= 1) {
    tokens -= 1
    out.ok = true
    out.retryAfter = 0
  } else {
    out.ok = false
    out.retryAfter = Math.max(1, Math.ceil((1 - tokens) / rate))
  }
  state.tokens = tokens
  out.remaining = Math.floor(tokens)
  out.reset = Math.ceil((burst - tokens) / rate)
  return out
}

/** Takes a token from the account's bucket; `ok: true` with limit -1 when the plan has none. */
export function takeAccountToken(a: Account, plan: Plan, now: number, out: Bucket): Bucket {
  if (plan.ratePerSecond === null || plan.burst === null) {
    out.ok = true
    out.limit = -1
    return out
  }
  return takeToken(a, plan.ratePerSecond, plan.burst, now, out)
}

/** Seconds to the next UTC midnight, at least 1: when a spent daily quota comes back. */
export function secondsToMidnight(now: number): number {
  return Math.max(1, Math.ceil((DAY_MS - (now % DAY_MS)) / 1000))
}

export class AddressLimiter {
  private buckets = new Map<string, { tokens: number; refilledAt: number }>()
  private scratch: Bucket = { ok: true, limit: 0, remaining: 0, reset: 0, retryAfter: 0 }

  /** Counts one bad-key request from `address`; the result says whether to answer 401 or 429. */
  take(address: string, now: number): Bucket {
    let b = this.buckets.get(address)
    if (!b) {
      if (this.buckets.size >= ADDRESSES_MAX) this.prune(now)
      b = { tokens: -1, refilledAt: now }
      this.buckets.set(address, b)
    }
    return takeToken(b, BAD_KEY_PER_SECOND, BAD_KEY_BURST, now, this.scratch)
  }

  /** Forgets addresses whose bucket has refilled: they are no different from new ones. */
  prune(now: number): void {
    const full = (BAD_KEY_BURST / BAD_KEY_PER_SECOND) * 1000
    for (const [addr, b] of this.buckets) if (now - b.refilledAt >= full) this.buckets.delete(addr)
    if (this.buckets.size >= ADDRESSES_MAX) this.buckets.clear()
  }
}
