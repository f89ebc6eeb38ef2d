// Everything a request handler may use, built once at start (see app.ts): the services on
// storage (services.ts) and what serving adds to them.
import type { Config } from './config.js'
import type { Billing } from './services/billing/index.js'
import type { AddressLimiter } from './services/limits.js'
import type { Logger } from './log.js'
import type { Metrics } from './metrics.js'
import type { Services } from './services/index.js'
import type { Watches } from './services/watches.js'

export interface Lifecycle {
  /** Storage is open and requests are served. */
  ready: boolean
  /** SIGTERM or SIGINT arrived: new requests get 503. */
  stopping: boolean
  /** Requests that have started and not yet been answered. */
  inflight: number
}

export interface Context extends Services {
  config: Config
  badKeys: AddressLimiter
  /** Wrong operator tokens per address: a burst of 5, then one every 5 s. */
  badOperatorTokens: AddressLimiter
  metrics: Metrics
  log: Logger
  /** Whether the log level is debug, looked up once rather than per request. */
  debug: boolean
  /** The OpenAPI document's bytes, served as they are in the repository. */
  openapi: Buffer
  lifecycle: Lifecycle
  /** The watches open here (GET /{ns}?watch=1 and its WebSocket). */
  watches: Watches
  /** Paid plans through Stripe; undefined when the operator has not turned them on. */
  billing: Billing | undefined
}
