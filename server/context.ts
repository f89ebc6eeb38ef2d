// Everything a request handler may use, built once at start (see app.ts).
import type { Engine } from '../engine/types.js'
import type { Accounts } from './accounts.js'
import type { Config } from './config.js'
import type { Data } from './data.js'
import type { AddressLimiter } from './limits.js'
import type { Logger } from './log.js'
import type { Metrics } from './metrics.js'
import type { Namespaces } from './namespaces.js'
import type { PlanBook } from './plans.js'
import type { Usage } from './usage.js'

export interface Lifecycle {
  /** Storage is open and requests are served. */
  ready: boolean
  /** SIGTERM or SIGINT arrived: new requests get 503. */
  stopping: boolean
  /** Requests that have started and not yet been answered. */
  inflight: number
}

export interface Context {
  config: Config
  engine: Engine
  plans: PlanBook
  accounts: Accounts
  namespaces: Namespaces
  data: Data
  usage: Usage
  badKeys: AddressLimiter
  metrics: Metrics
  log: Logger
  /** Whether the log level is debug, looked up once rather than per request. */
  debug: boolean
  /** The OpenAPI document's bytes, served as they are in the repository. */
  openapi: Buffer
  lifecycle: Lifecycle
  /** Removes an account and everything it owns. */
  deleteAccount(accountId: string): Promise<void>
}
