// The event loop's delay, for /metrics: how late the loop ran a timer due every millisecond.
// Every request, write commit and watch delivery of this process waits behind whatever holds
// the loop (a long synchronous step, a GC pause, a rehash of a large Map), so its tail is a
// floor under every answer's tail. prom-client's own `nodejs_eventloop_lag_*` gauges sample
// every 10 ms and stop at p99; a 1 ms timer gives enough samples in a few seconds for p99.9.
import { type IntervalHistogram, monitorEventLoopDelay } from 'node:perf_hooks'

export interface LoopDelay {
  /** Delays in seconds since the previous read: 0.5, 0.99, 0.999 and the largest. */
  p50: number
  p99: number
  p999: number
  max: number
  samples: number
}

export class LoopDelayMonitor {
  private readonly h: IntervalHistogram
  /** Node records the time between ticks; the timer's own interval is not a delay. */
  private readonly intervalNs: number

  constructor(resolutionMs = 1) {
    this.h = monitorEventLoopDelay({ resolution: resolutionMs })
    this.intervalNs = resolutionMs * 1e6
    this.h.enable()
  }

  /**
   * The delays since the previous read, then starts a new window: a scrape every 15 s shows
   * each 15 s apart, not a tail diluted by hours of quiet. (Node drops the interval in flight
   * at a reset: a stall that spans a read is not counted in either window.)
   */
  read(): LoopDelay {
    const h = this.h
    const late = (ns: number) => (h.count === 0 ? 0 : Math.max(0, ns - this.intervalNs) / 1e9)
    const out = {
      p50: late(h.percentile(50)),
      p99: late(h.percentile(99)),
      p999: late(h.percentile(99.9)),
      max: late(h.max),
      samples: h.count,
    }
    h.reset()
    return out
  }

  stop(): void {
    this.h.disable()
  }
}
