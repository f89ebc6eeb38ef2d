// The account token bucket on Redis, shared by every front end, spent without a round trip
// per request. The bucket lives in Redis (record-scripts.ts BUCKET). A front end makes at
// most one call per account at a time: requests that arrive while it is under way wait for
// it, and the next call asks for all of them at once, so a burst costs a few calls and every
// token it takes is spent (a call is granted what it asked or what is left, whole tokens,
// and the front end admits its waiters in order). A call that finds plenty left also brings
// a lease, spent from memory for LEASE_MS: at most a twentieth of a second of the plan's rate
// and a sixteenth of what is left shared among the front ends that called in the last second,
// so leases shrink as the bucket empties and vanish near its bottom, where every token is
// asked of Redis. Leased tokens are taken from the shared bucket, never added to it, so all
// front ends together admit at most the bucket; what a lease did not spend goes back with the
// next call. Layout and rules: docs/redis.md, "Token buckets".
import { randomBytes } from 'node:crypto'
import { LRUCache } from 'lru-cache'
import type { Bucket, Limiter } from '../types.js'
import type { Commands } from './commands.js'

/** How long a lease is spent from memory before the front end asks Redis again. */
export const LEASE_MS = 250
/** Accounts whose leases a front end holds at once; the least recent is forgotten. */
const ACCOUNTS_MAX = 100_000
/**
 * Requests of one account that wait on its call at most; more make calls of their own (no
 * lease), so a flood of one account's requests cannot grow one queue without end.
 */
const WAITING_MAX = 10_000
/** Names this front end's bucket calls: `<this>.<sequence>` (the script's marker, BUCKET). */
export const CALLER = randomBytes(9).toString('base64url')
let calls = 0

interface Waiter {
  cost: number
  out: Bucket
  resolve: (b: Bucket) => void
  reject: (e: unknown) => void
}

interface Account {
  /** Tokens taken from the shared bucket and not spent yet. */
  held: number
  /** The shared bucket's tokens at the last answer. */
  left: number
  until: number
  /** A call for this account is under way. */
  calling: boolean
  /** Requests waiting for the next call, in arrival order. */
  waiting: Waiter[]
}

export class LeasedBuckets implements Limiter {
  // An evicted account's held tokens are not given back: at most its last lease, refilled by
  // its rate within a twentieth of a second.
  private accounts = new LRUCache<string, Account>({ max: ACCOUNTS_MAX })
  /** Calls made to Redis since start (/metrics, bench/bucket.ts). */
  calls = 0

  constructor(private cmd: Commands) {}

  take(
    id: string,
    rate: number,
    burst: number,
    _now: number,
    out: Bucket,
    cost = 1,
  ): Bucket | Promise<Bucket> {
    let acct = this.accounts.get(id)
    if (acct === undefined) {
      acct = { held: 0, left: burst, until: 0, calling: false, waiting: [] }
      this.accounts.set(id, acct)
    }
    if (acct.waiting.length === 0 && acct.held >= cost && Date.now() < acct.until) {
      acct.held -= cost
      return fill(out, true, acct.left + acct.held, rate, burst, 0)
    }
    if (acct.calling && acct.waiting.length >= WAITING_MAX) {
      return this.call(id, acct, rate, burst, cost, 0).then(([granted, , retry]) =>
        fill(out, granted >= cost, acct.left + acct.held, rate, burst, granted >= cost ? 0 : retry),
      )
    }
    const p = new Promise<Bucket>((resolve, reject) =>
      acct.waiting.push({ cost, out, resolve, reject }),
    )
    if (!acct.calling) this.next(id, acct, rate, burst)
    return p
  }

  /** Serves what waits from the lease, and asks Redis for the rest in one call. */
  private next(id: string, acct: Account, rate: number, burst: number): void {
    const fresh = Date.now() < acct.until
    let i = 0
    while (fresh && i < acct.waiting.length && acct.held >= acct.waiting[i]!.cost) {
      const w = acct.waiting[i++]!
      acct.held -= w.cost
      w.resolve(fill(w.out, true, acct.left + acct.held, rate, burst, 0))
    }
    const batch = acct.waiting.slice(i)
    acct.waiting = []
    if (batch.length === 0) return
    let need = 0
    for (const w of batch) need += w.cost
    acct.calling = true
    this.call(id, acct, rate, burst, need, Math.floor(rate / 20)).then(
      ([granted]) => {
        // Waiters take the grant in arrival order; a grant short of the whole batch leaves
        // a remainder smaller than some waiter's cost, which goes back with the next call.
        let avail = granted
        for (const w of batch) {
          if (avail >= w.cost) {
            avail -= w.cost
            w.resolve(fill(w.out, true, acct.left + acct.held + avail, rate, burst, 0))
          } else {
            const retry = Math.max(1, Math.ceil((w.cost - avail) / rate))
            w.resolve(fill(w.out, false, acct.left + acct.held + avail, rate, burst, retry))
          }
        }
        acct.held += avail
        acct.calling = false
        this.next(id, acct, rate, burst)
      },
      (err) => {
        // Those that waited on the call, and those that came meanwhile, fail with it at
        // once: a Redis that failed one call is not asked again for each request queued.
        const also = acct.waiting
        acct.waiting = []
        acct.calling = false
        for (const w of batch) w.reject(err)
        for (const w of also) w.reject(err)
      },
    )
  }

  /** One script call: asks `need` tokens, gives back what is held, asks a lease of `want`. */
  private async call(
    id: string,
    acct: Account,
    rate: number,
    burst: number,
    need: number,
    want: number,
  ): Promise<[number, number, number]> {
    const back = acct.held
    acct.held = 0
    // Should the call fail, the tokens given back may or may not have reached Redis: they
    // are not held here either way.
    const marker = `c:{${id}}:bucket:${CALLER}.${++calls}`
    this.calls++
    const [granted, left, , retry, leased]: number[] = await this.cmd.read('cairnBucket', [
      `c:{${id}}:bucket`,
      marker,
      rate,
      burst,
      need,
      back,
      want,
      CALLER,
    ])
    acct.held += Number(leased ?? 0)
    acct.left = Number(left)
    acct.until = Date.now() + LEASE_MS
    return [Number(granted), Number(left), Number(retry)]
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
  out.remaining = Math.floor(remaining)
  out.reset = Math.max(0, Math.ceil((burst - remaining) / rate))
  out.retryAfter = retry
  return out
}
