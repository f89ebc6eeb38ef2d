// Prometheus metrics. Requests are counted on the hot path into plain arrays (by route and
// status, and a latency histogram by route) and rendered as text only when scraped;
// prom-client supplies the process metrics and the engine's figures at scrape time.
import client from 'prom-client'
import { LoopDelayMonitor } from './loop-delay.js'
import type { EngineStats, ReadLaneStats, Store } from './store/types.js'

export const ROUTES = [
  'get_value',
  'put_value',
  'delete_value',
  'list_keys',
  'patch_value',
  'transaction',
  'delete_prefix',
  'watch',
  'create_namespace',
  'list_namespaces',
  'delete_namespace',
  'usage',
  'openapi',
  'preflight',
  'unmatched',
  'dashboard',
  'operator',
  'ops',
  'billing_webhook',
  'upstash',
] as const
export type RouteName = (typeof ROUTES)[number]
export const R = Object.fromEntries(ROUTES.map((r, i) => [r, i])) as Record<RouteName, number>

/** Upper bounds of the latency buckets, in seconds. */
const BUCKETS = [
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
]

/** Statuses are counted in a flat array indexed by route and status (100..599). */
const STATUSES = 500

export class Metrics {
  private counts = new Float64Array(ROUTES.length * STATUSES)
  private hist = ROUTES.map(() => new Float64Array(BUCKETS.length + 1))
  private sums = new Float64Array(ROUTES.length)
  readonly registry = new client.Registry()

  constructor(store: Store) {
    client.collectDefaultMetrics({ register: this.registry, prefix: 'cairn_' })
    if (store.admin !== undefined) this.engineGauges(store.admin.stats)
    if (store.readLane !== undefined) this.laneGauges(store.readLane)
    new client.Gauge({
      name: 'cairn_storage_state',
      help: 'The storage state: 1 for the current one of ok, no_space (disk full), degraded (a Redis master down) and failed.',
      labelNames: ['state'],
      registers: [this.registry],
      collect() {
        const now = store.health().state
        for (const state of ['ok', 'no_space', 'degraded', 'failed'])
          this.set({ state }, now === state ? 1 : 0)
      },
    })
    this.loopDelay()
  }

  /** The event loop's delay since the previous scrape (server/loop-delay.ts). */
  private loopDelay(): void {
    const monitor = new LoopDelayMonitor()
    new client.Gauge({
      name: 'cairn_event_loop_delay_seconds',
      help: 'How late the event loop ran a timer due every millisecond, since the previous scrape: quantiles 0.5, 0.99, 0.999 and 1 (the largest).',
      labelNames: ['quantile'],
      registers: [this.registry],
      collect() {
        const d = monitor.read()
        this.set({ quantile: '0.5' }, d.p50)
        this.set({ quantile: '0.99' }, d.p99)
        this.set({ quantile: '0.999' }, d.p999)
        this.set({ quantile: '1' }, d.max)
      },
    })
  }

  /** The embedded engine's figures, read at scrape time. */
  private engineGauges(stats: () => EngineStats): void {
    const gauge = this.gaugesOf(stats)
    gauge('cairn_engine_keys', 'Live keys in storage.', (s) => s.keys)
    gauge(
      'cairn_engine_namespaces',
      'Namespaces in storage, system ones included.',
      (s) => s.namespaces,
    )
    gauge('cairn_engine_live_bytes', 'Bytes of live keys and values.', (s) => s.liveBytes)
    gauge('cairn_engine_disk_bytes', 'Bytes in segment files.', (s) => s.diskBytes)
    gauge('cairn_engine_dead_bytes', 'Bytes on disk no longer reachable.', (s) => s.deadBytes)
    gauge('cairn_engine_segments', 'Segment files.', (s) => s.segments)
    gauge(
      'cairn_engine_compactions_total',
      'Compactions finished since start.',
      (s) => s.compactions,
    )
    gauge(
      'cairn_engine_writes_total',
      'Writes taken since start, those that then failed included (cairn_engine_write_failures_total).',
      (s) => s.writes,
    )
    gauge('cairn_engine_fsyncs_total', 'fsync calls since start.', (s) => s.fsyncs)
    gauge(
      'cairn_engine_fsync_seconds_total',
      'Time spent in fsync since start.',
      (s) => s.fsyncTotalMs / 1000,
    )
    gauge(
      'cairn_engine_fsync_last_seconds',
      'Duration of the last fsync.',
      (s) => s.fsyncLastMs / 1000,
    )
    gauge('cairn_engine_cache_hits_total', 'Value cache hits.', (s) => s.cacheHits)
    gauge('cairn_engine_cache_misses_total', 'Value cache misses.', (s) => s.cacheMisses)
    gauge(
      'cairn_engine_corrupt_reads_total',
      'Reads that met a damaged record (run cairn repair).',
      (s) => s.corruptReads,
    )
    gauge(
      'cairn_engine_write_failures_total',
      'Writes the storage failed to make durable (disk full or an I/O error).',
      (s) => s.writeFailures,
    )
  }

  /** Makes gauges that read one figure each of `stats()` at scrape time. */
  private gaugesOf<T>(stats: () => T) {
    return (name: string, help: string, read: (s: T) => number) =>
      new client.Gauge({
        name,
        help,
        registers: [this.registry],
        collect() {
          this.set(read(stats()))
        },
      })
  }

  /** The Redis read lane's counts: a lane that keeps rerouting is slower, not wrong. */
  private laneGauges(stats: () => ReadLaneStats): void {
    const gauge = this.gaugesOf(stats)
    gauge(
      'cairn_redis_read_lane_calls_total',
      'Reads sent on the read lane to Redis masters since start.',
      (s) => s.calls,
    )
    gauge(
      'cairn_redis_read_lane_rerouted_total',
      'Reads the lane sent through ioredis instead (cluster answers, lost or quiet masters).',
      (s) => s.rerouted,
    )
    gauge(
      'cairn_redis_read_lane_lost_total',
      'Read lane connections lost or given up on since start.',
      (s) => s.lost,
    )
  }

  /**
   * Reports how full the bounded per-client maps are (`cairn_bounded_entries{map}`): each is
   * an lru-cache with a documented bound, and this shows a flood staying under it.
   */
  boundedMaps(read: () => Record<string, number>): void {
    new client.Gauge({
      name: 'cairn_bounded_entries',
      help: 'Entries held by each bounded per-client map (limiters, throttles, caches).',
      labelNames: ['map'],
      registers: [this.registry],
      collect() {
        for (const [map, n] of Object.entries(read())) this.set({ map }, n)
      },
    })
  }

  /**
   * The watches open on this front end (`cairn_watches_open`): each costs its writer a
   * delivery, so one its client left must not stay counted here.
   */
  openWatches(read: () => number): void {
    new client.Gauge({
      name: 'cairn_watches_open',
      help: 'Watches open on this front end (Server-Sent Events and WebSockets, dashboard live views included).',
      registers: [this.registry],
      collect() {
        this.set(read())
      },
    })
  }

  /** Counts one answered request; `seconds` is from arrival to the last byte handed to the socket. */
  observe(route: number, status: number, seconds: number): void {
    const s = status >= 100 && status < 600 ? status - 100 : 499
    this.counts[route * STATUSES + s]!++
    const h = this.hist[route]!
    let i = 0
    while (i < BUCKETS.length && seconds > BUCKETS[i]!) i++
    h[i]!++
    this.sums[route]! += seconds
  }

  async text(): Promise<string> {
    const lines: string[] = [
      '# HELP cairn_http_requests_total HTTP requests answered, by route and status.',
      '# TYPE cairn_http_requests_total counter',
    ]
    this.counts.forEach((n, k) => {
      if (n === 0) return
      lines.push(
        `cairn_http_requests_total{route="${ROUTES[Math.floor(k / STATUSES)]}",status="${(k % STATUSES) + 100}"} ${n}`,
      )
    })
    lines.push(
      '# HELP cairn_http_request_duration_seconds Time from a request arriving to its answer being written.',
      '# TYPE cairn_http_request_duration_seconds histogram',
    )
    ROUTES.forEach((route, r) => {
      const h = this.hist[r]!
      let total = 0
      for (const n of h) total += n
      if (total === 0) return
      let cum = 0
      BUCKETS.forEach((le, i) => {
        cum += h[i]!
        lines.push(`cairn_http_request_duration_seconds_bucket{route="${route}",le="${le}"} ${cum}`)
      })
      lines.push(`cairn_http_request_duration_seconds_bucket{route="${route}",le="+Inf"} ${total}`)
      lines.push(`cairn_http_request_duration_seconds_sum{route="${route}"} ${this.sums[r]}`)
      lines.push(`cairn_http_request_duration_seconds_count{route="${route}"} ${total}`)
    })
    return `${lines.join('\n')}\n${await this.registry.metrics()}`
  }
}
