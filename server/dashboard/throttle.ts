// Counts failures per key (an email, a client address, or both) in a sliding window, so
// password guessing is slow whether it spreads over addresses or over accounts. At most
// `maxKeys` keys are remembered, least recently failed evicted first, so a flood of distinct
// addresses or emails cannot grow memory; a key's record expires with its window. `now` is the
// server's clock (services/clock.ts); the cache's own expiry only bounds memory.
import { LRUCache } from 'lru-cache'

export class Throttle {
  private failures: LRUCache<string, number[]>

  constructor(
    private readonly max: number,
    private readonly windowMs: number,
    maxKeys = 100_000,
  ) {
    this.failures = new LRUCache({ max: maxKeys, ttl: windowMs })
  }

  /** Seconds until another attempt is allowed, or 0 when one is allowed now. */
  retryAfter(key: string, now: number): number {
    const times = this.recent(key, now)
    if (times.length < this.max) return 0
    return Math.max(1, Math.ceil((times[0]! + this.windowMs - now) / 1000))
  }

  fail(key: string, now: number): void {
    const times = this.recent(key, now)
    times.push(now)
    this.failures.set(key, times)
  }

  /** Takes back the latest failure: an attempt counted before its outcome that did not happen. */
  undo(key: string): void {
    const times = this.failures.get(key)
    if (times && times.length > 0) times.pop()
  }

  reset(key: string): void {
    this.failures.delete(key)
  }

  get size(): number {
    return this.failures.size
  }

  private recent(key: string, now: number): number[] {
    const times = this.failures.get(key)
    if (!times) return []
    return times.filter((t) => t > now - this.windowMs)
  }
}
