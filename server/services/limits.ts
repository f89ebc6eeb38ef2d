// Rate limits. Each account has a token bucket (all its keys share it) filled at the plan's
// rate up to its burst, kept by the store, so front ends on one store share it; each client
// address has a small bucket for requests with missing or wrong keys, so guessing keys is
// slow and cheap to refuse.
import type { Plan } from './plans.js'
import { TokenBuckets } from '../store/token-bucket.js'
import type { Bucket, Limiter } from '../store/types.js'

export type { Bucket }

const DAY_MS = 86_400_000
const BAD_KEY_BURST = 20
const BAD_KEY_PER_SECOND = 2
/** Addresses the per-address limiters remember at most (docs/configuration.md). */
export const ADDRESSES_MAX = 100_000

/** A bucket answer to fill in (takeAccountToken's `out`). */
export const newBucket = (): Bucket => ({
  ok: true,
  limit: 0,
  remaining: 0,
  reset: 0,
  retryAfter: 0,
})

/** Takes a token from the account's bucket; `ok: true` with limit -1 when the plan has none. */
export function takeAccountToken(
  limiter: Limiter,
  accountId: string,
  plan: Plan,
  now: number,
  out: Bucket,
  cost = 1,
): Bucket | Promise<Bucket> {
  if (plan.ratePerSecond === null || plan.burst === null) {
    out.ok = true
    out.limit = -1
    return out
  }
  return limiter.take(accountId, plan.ratePerSecond, plan.burst, now, out, cost)
}

/** Seconds to the next UTC midnight, at least 1: when a spent daily quota comes back. */
export function secondsToMidnight(now: number): number {
  return Math.max(1, Math.ceil((DAY_MS - (now % DAY_MS)) / 1000))
}

/**
 * Token buckets per client address, for requests that prove nothing (missing or wrong API
 * keys, wrong operator tokens). At most ADDRESSES_MAX addresses are held, least recently
 * seen evicted first: a flood of distinct addresses cannot grow memory, and an address
 * evicted that way comes back with a full bucket, no more than a new address would have.
 */
export class AddressLimiter {
  private buckets: TokenBuckets
  private scratch: Bucket = newBucket()

  constructor(
    private readonly burst = BAD_KEY_BURST,
    private readonly perSecond = BAD_KEY_PER_SECOND,
    max = ADDRESSES_MAX,
  ) {
    // A bucket left alone this long has refilled: forgetting it changes nothing.
    this.buckets = new TokenBuckets(max, Math.ceil((burst / perSecond) * 1000))
  }

  /** Counts one request from `address`; the result says whether to refuse it with 429. */
  take(address: string, now: number): Bucket {
    return this.buckets.take(address, this.perSecond, this.burst, now, this.scratch)
  }

  /** Drops buckets that have refilled (the server calls this every few seconds). */
  prune(): void {
    this.buckets.prune()
  }

  get size(): number {
    return this.buckets.size
  }
}
