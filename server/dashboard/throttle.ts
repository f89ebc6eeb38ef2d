// Counts failures per key (an email or a client address) in a sliding window, so
// password guessing is slow whether it spreads over addresses or over accounts.
export class Throttle {
  private failures = new Map<string, number[]>()

  constructor(
    private readonly max: number,
    private readonly windowMs: number,
  ) {}

  /** Seconds until another attempt is allowed, or 0 when one is allowed now. */
  retryAfter(key: string, now = Date.now()): number {
    const times = this.recent(key, now)
    if (times.length < this.max) return 0
    return Math.max(1, Math.ceil((times[0]! + this.windowMs - now) / 1000))
  }

  fail(key: string, now = Date.now()): void {
    const times = this.recent(key, now)
    times.push(now)
    this.failures.set(key, times)
    if (this.failures.size > 100_000) this.sweep(now)
  }

  reset(key: string): void {
    this.failures.delete(key)
  }

  private recent(key: string, now: number): number[] {
    const times = this.failures.get(key)
    if (!times) return []
    const fresh = times.filter((t) => t > now - this.windowMs)
    if (fresh.length === 0) this.failures.delete(key)
    return fresh
  }

  private sweep(now: number): void {
    for (const key of this.failures.keys()) this.recent(key, now)
  }
}
