// The account token bucket on Redis, taken in small leases. The bucket itself lives in Redis
// (record-scripts.ts BUCKET) so front ends share it; a front end that finds plenty left takes
// up to a twentieth of a second of the plan's rate more than its request needs and spends
// them from memory, so a busy account costs one script call per lease, not one per request.
// Leased tokens are taken from the shared bucket, never added to it, so every front end
// together still admits at most the bucket; a lease is at most an eighth of what is left
// (none once the bucket runs low, when every request asks Redis again), so a burst split
// across front ends gets about one burst. Unspent tokens go back with the next call. Layout
// and rules: docs/redis.md.
import { randomBytes } from 'node:crypto'
import { LRUCache } from 'lru-cache'
import type { Bucket, Limiter } from '../types.js'
import type { Commands } from './commands.js'

/** How long a lease is spent from memory before the front end asks Redis again. */
export const LEASE_MS = 250
/** Accounts whose leases a front end holds at once; the least recent is forgotten. */
const ACCOUNTS_MAX = 100_000
/** Names this front end's bucket calls: `<this>.<sequence>` (the script's marker, BUCKET). */
const CALLER = randomBytes(9).toString('base64url')
let calls = 0

interface Lease {
  /** Tokens taken from the shared bucket and not spent yet. */
  held: number
  /** The shared bucket's tokens when the lease was taken. */
  left: number
  until: number
  /**
   * The call under way for this account, which other requests may wait for rather than call
   * too: it settles once the lease it brings is held (or rejects as the call did).
   */
  pending: Promise<void> | null
  /** Tokens the requests waiting on `pending` will take from its lease. */
  promised: number
  /** What that call asked to lease. */
  asked: number
  /** Calls made for this account, and the last whose `left` was taken: an older answer arriving late does not overwrite a newer one. */
  calls: number
  heard: number
}

export class LeasedBuckets implements Limiter {
  // An evicted lease's tokens are not given back: at most rate / 20 of an account that has
  // gone quiet on this front end, refilled by its rate.
  private leases = new LRUCache<string, Lease>({ max: ACCOUNTS_MAX })

  constructor(private cmd: Commands) {}

  take(
    id: string,
    rate: number,
    burst: number,
    _now: number,
    out: Bucket,
    cost = 1,
  ): Bucket | Promise<Bucket> {
    let lease = this.leases.get(id)
    if (lease === undefined) {
      lease = {
        held: 0,
        left: burst,
        until: 0,
        pending: null,
        promised: 0,
        asked: 0,
        calls: 0,
        heard: 0,
      }
      this.leases.set(id, lease)
    }
    if (lease.held >= cost && Date.now() < lease.until) {
      lease.held -= cost
      return fill(out, true, lease.left + lease.held, rate, burst, 0)
    }
    // A call under way while the bucket had plenty will bring a lease: wait for it rather
    // than call too, as long as its lease covers every request waiting on it (more would
    // queue call after call). Near the bottom leases are empty, and requests ask Redis side
    // by side. A call that fails fails its waiters with it, at once.
    if (lease.pending !== null && lease.left >= 8 * cost && lease.promised + cost <= lease.asked) {
      lease.promised += cost
      return lease.pending.then(() => this.take(id, rate, burst, 0, out, cost))
    }
    return this.ask(id, lease, rate, burst, out, cost)
  }

  private ask(
    id: string,
    lease: Lease,
    rate: number,
    burst: number,
    out: Bucket,
    cost: number,
  ): Promise<Bucket> {
    const back = lease.held
    lease.held = 0
    // A twentieth of a second of the plan's rate (an eighth of what is left at most, which
    // the script sees to): a busy account costs a call per 50 ms of its plan's rate.
    const want = Math.floor(rate / 20)
    // Should the call fail, the tokens given back may or may not have reached Redis: they
    // are not held here either way.
    const marker = `c:{${id}}:bucket:${CALLER}.${++calls}`
    const call = this.cmd.read('cairnBucket', [
      `c:{${id}}:bucket`,
      marker,
      rate,
      burst,
      cost,
      back,
      want,
    ])
    const n = ++lease.calls
    const done = call.then(([ok, left, , retry, leased]: number[]) => {
      lease.held += Number(leased ?? 0)
      if (n > lease.heard) {
        lease.heard = n
        lease.left = Number(left)
        lease.until = Date.now() + LEASE_MS
      }
      return fill(out, ok === 1, lease.left + lease.held, rate, burst, Number(retry))
    })
    if (want > 0 && lease.pending === null) {
      const settled = done
        .finally(() => {
          lease.pending = null
          lease.promised = 0
        })
        .then(() => {})
      // Waiters see the failure; the request that made the call sees it through `done`.
      settled.catch(() => {})
      lease.pending = settled
      lease.asked = want
    }
    return done
  }
}

function fill(
  out: Bucket,
  ok: boolean,
  remaining: number,
  rate: number,
  burst: number,
  retry: number,
): Bucket {
  out.ok = ok
  out.limit = burst
  out.remaining = remaining
  out.reset = Math.max(0, Math.ceil((burst - remaining) / rate))
  out.retryAfter = retry
  return out
}
