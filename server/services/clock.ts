// The server's clock: what every time-based rule reads (rate limits and throttles, sessions'
// expiry, usage days and hours, a TTL's deadline and the embedded engine's expiry). One seam,
// so that a test moves time on instead of sleeping against a deadline. The embedded engine
// runs on it too (OpenOptions.clock); Redis keeps its own time (TIME in its scripts), so on
// Redis a key's expiry and the shared rate limiter follow the cluster, not this clock.
// Timers (flushes, retries, drains) stay on the wall: they say when to look, not what is due.

export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number
}

export const wallClock: Clock = { now: () => Date.now() }

/**
 * Tests only (CAIRN_TEST_CLOCK=1, docs/configuration.md): starts at the wall's time and then
 * stands still; it moves only when the operator's `clock.advance` moves it, and only forward.
 * A test then burns a burst with no token coming back meanwhile, and lets an hour pass at once.
 */
export class TestClock implements Clock {
  private at = Date.now()

  now(): number {
    return this.at
  }

  advance(ms: number): number {
    if (!Number.isFinite(ms) || ms < 0) throw new RangeError('the clock moves forward only')
    this.at += Math.round(ms)
    return this.at
  }
}
