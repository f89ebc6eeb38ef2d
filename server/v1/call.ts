// One /v1 request from arrival to answer. Headers are read while the uWebSockets.js request
// is alive (it dies when the handler returns); the answer is written in one cork, with the
// headers every response carries: X-Request-Id, CORS, and for an authenticated caller the
// RateLimit-* figures. Usage and metrics are counted as the answer goes out.
import type { Account, ApiKey } from '../accounts.js'
import type { Context } from '../context.js'
import { ApiError, ERRORS, type ErrorCode, errorJson } from '../errors.js'
import { statusLine } from '../http/status.js'
import type { HttpResponse } from '../http/uws.js'
import { EXPOSE, allowOrigin } from './cors.js'

const JSON_TYPE = 'application/json'
/** An unread body is read and dropped up to this size before an early answer; past it, cut off. */
const DRAIN_MAX = 64 * 1024 * 1024

export class Call {
  aborted = false
  done = false
  account: Account | undefined = undefined
  key: ApiKey | undefined = undefined
  /** The usage operation (usage.ts OP), or -1 when the request is not counted. */
  op = -1
  route: number
  bytesIn = 0
  limit = -1
  remaining = 0
  reset = 0
  /**
   * The request has a body nobody has read yet and the connection closes after the answer:
   * an early answer then waits for the body to arrive (see body.ts for why).
   */
  unreadBody = false
  readonly started: number

  constructor(
    readonly ctx: Context,
    readonly res: HttpResponse,
    readonly id: string,
    readonly origin: string,
    route: number,
  ) {
    this.route = route
    this.started = performance.now()
    ctx.lifecycle.inflight++
  }

  /** Must be called before the first await: uWebSockets.js needs to know we answer later. */
  async(): this {
    this.res.onAborted(() => {
      this.aborted = true
      this.finish(499, 0)
    })
    return this
  }

  private head(status: number): void {
    const res = this.res
    res.writeStatus(statusLine(status))
    res.writeHeader('X-Request-Id', this.id)
    if (this.origin !== '') {
      const allowed = allowOrigin(this.ctx.config, this.origin)
      if (allowed !== '') {
        res.writeHeader('Access-Control-Allow-Origin', allowed)
        res.writeHeader('Access-Control-Expose-Headers', EXPOSE)
      }
      if (this.ctx.config.corsOrigins !== '*') res.writeHeader('Vary', 'Origin')
    }
    if (this.limit >= 0) {
      res.writeHeader('RateLimit-Limit', String(this.limit))
      res.writeHeader('RateLimit-Remaining', String(this.remaining))
      res.writeHeader('RateLimit-Reset', String(this.reset))
    }
  }

  /** Answers with a JSON body and optional extra headers. */
  send(
    status: number,
    body: string | Buffer,
    h1?: string,
    v1?: string,
    h2?: string,
    v2?: string,
    close = false,
  ): void {
    if (this.done || this.aborted) return
    this.res.cork(() => {
      this.head(status)
      const res = this.res
      if (h1 !== undefined) res.writeHeader(h1, v1!)
      if (h2 !== undefined) res.writeHeader(h2, v2!)
      res.writeHeader('Content-Type', JSON_TYPE)
      res.end(body, close)
    })
    this.finish(status, typeof body === 'string' ? Buffer.byteLength(body) : body.length)
  }

  /** Answers without a body (304, 204). */
  empty(status: number, headers: [string, string][] = []): void {
    if (this.done || this.aborted) return
    this.res.cork(() => {
      this.head(status)
      for (const [k, v] of headers) this.res.writeHeader(k, v)
      this.res.endWithoutBody()
    })
    this.finish(status, 0)
  }

  fail(code: ErrorCode, message?: string, headers?: Record<string, string>, close = false): void {
    const status = ERRORS[code].status
    if (this.done || this.aborted) return
    if (this.unreadBody) {
      this.unreadBody = false
      this.async()
      let seen = 0
      this.res.onData((chunk, isLast) => {
        seen += chunk.byteLength
        if (isLast || seen > DRAIN_MAX) this.fail(code, message, headers, close || !isLast)
      })
      return
    }
    const body = errorJson(code, message)
    this.res.cork(() => {
      this.head(status)
      if (headers) for (const k in headers) this.res.writeHeader(k, headers[k]!)
      this.res.writeHeader('Content-Type', JSON_TYPE)
      this.res.end(body, close)
    })
    this.finish(status, Buffer.byteLength(body))
  }

  /** Answers for anything thrown below a handler: ApiError as itself, the rest as a 500. */
  error(err: unknown): void {
    if (err instanceof ApiError) return this.fail(err.code, err.message, err.headers)
    this.ctx.log.error(
      { reqId: this.id, err: (err as Error)?.message ?? String(err) },
      'request failed',
    )
    this.fail('internal_error')
  }

  private finish(status: number, bytesOut: number): void {
    if (this.done) return
    this.done = true
    const ctx = this.ctx
    ctx.lifecycle.inflight--
    const now = Date.now()
    if (this.account !== undefined && this.op >= 0) {
      // A request the client walked away from was still served (a PUT may have landed).
      ctx.usage.record(
        this.account,
        this.op,
        status === 499 ? 200 : status,
        this.bytesIn,
        bytesOut,
        now,
      )
    }
    ctx.metrics.observe(this.route, status, (performance.now() - this.started) / 1000)
    if (status >= 500 && status !== 503)
      ctx.log.warn({ reqId: this.id, status, route: this.route }, 'server error')
    else if (ctx.log.isLevelEnabled('debug'))
      ctx.log.debug({ reqId: this.id, status, route: this.route }, 'request')
  }
}
