// One /v1 request from arrival to answer. Headers are read while the uWebSockets.js request
// is alive (it dies when the handler returns); the answer is written in one cork, with the
// headers every response carries: X-Request-Id, CORS, and for an authenticated caller the
// RateLimit-* figures. Usage and metrics are counted as the answer goes out.
//
// All response headers go out in a single writeHeader call, as one block of lines: each
// call crosses from JavaScript into uWebSockets.js, and on a small GET those crossings cost
// as much as the rest of our work. This is safe because no value in the block comes from
// the client unchecked: request ids match a strict pattern, origins come from the
// configuration, versions and counters are numbers.
import type { Account, ApiKey } from '../services/accounts.js'
import type { Context } from '../context.js'
import { type ErrorCode, errorStatus, errorText, isContractError } from '../wire/errors.js'
import { statusLine } from '../http/status.js'
import type { HttpResponse } from '../http/uws.js'
import { ROUTES } from '../metrics.js'
import { endHead } from '../http/head.js'
import { endBody } from '../http/held-body.js'
import { ignoreAbort } from '../http/cork-room.js'
import { storageFault } from '../services/storage-faults.js'
import { apiErrorOf, storeCode } from '../services/store-errors.js'
import { Repeats } from '../log.js'
import { EXPOSE, allowOrigin } from './cors.js'
import type { Entry } from '../store/types.js'
import type { Refusal } from './refusal.js'
import { OP } from '../services/usage.js'

/** An unread body is read and dropped up to this size before an early answer; past it, cut off. */
const DRAIN_MAX = 64 * 1024 * 1024
const CORS_TAIL = `\r\nAccess-Control-Expose-Headers: ${EXPOSE}`
/** Storage refusals are logged once a second per kind (a full disk refuses every write). */
const REFUSALS = new Repeats(1000)

/** Extra header lines, each `\r\nName: value`, for `send` and `fail`. */
export function headerLines(headers: Record<string, string> | undefined): string {
  let out = ''
  if (headers) for (const k in headers) out += `\r\n${k}: ${headers[k]}`
  return out
}

/** A deferred request's body as it arrives (deferred.ts). */
export interface BodyStash {
  chunks: Buffer[]
  size: number
  /** The most kept: any plan's largest body, then the operation's own limit once it asks. */
  cap: number
  /** More arrived than `cap`: what came was dropped and the body is too large. */
  over: boolean
  done: boolean
  /** Called once when the last chunk is in (set by a reader that came first). */
  onDone: (() => void) | undefined
}

/** From now on a stash keeps nothing: what it holds goes, and what comes is dropped. */
export function keepNothing(stash: BodyStash): void {
  stash.cap = -1
  stash.chunks.length = 0
}

export class Call {
  aborted = false
  done = false
  account: Account | undefined = undefined
  key: ApiKey | undefined = undefined
  /** The API key as sent: a watch checks it again while it lasts (watch-session.ts). */
  secret = ''
  /** A HEAD request: answered with its status and headers, never a body (HTTP's framing). */
  headOnly = false
  /** The usage operation (usage.ts OP), or -1 when the request is not counted. */
  op = -1
  /** Requests this call counts as (a transaction's ops). */
  count = 1
  /** The namespace the request is addressed to ('' for none): it counts to it too. */
  ns = ''
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
  /** The body as it arrived, when the request was deferred before its operation (deferred.ts). */
  stash: BodyStash | undefined = undefined
  /** A GET's read, started while the rate limit was checked (entries.ts prefetch). */
  prefetched: Promise<Entry | undefined> | undefined = undefined
  /** The connection is not read while this request's write is applied (see applyLater). */
  private paused = false
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

  /** Called when the client goes away before the answer is complete (a watch's stream). */
  onAbort: (() => void) | undefined = undefined
  private asyncSet = false

  /** Must be called before the first await: uWebSockets.js needs to know we answer later. */
  async(): this {
    if (this.asyncSet) return this
    this.asyncSet = true
    this.res.onAborted(() => {
      this.aborted = true
      this.finish(499, 0)
      this.onAbort?.()
    })
    return this
  }

  /**
   * Starts a streamed answer (a watch's events): the status and headers now, the body as it
   * comes (res.write), ended by endStream. false when the client is gone.
   */
  openStream(contentType: string, extra = ''): boolean {
    if (this.done || this.aborted) return false
    this.res.cork(() => this.head(200, 'Content-Type', contentType, extra))
    return true
  }

  /** Ends a streamed answer, counting it as answered. */
  endStream(bytesOut: number): void {
    if (this.done || this.aborted) return
    this.res.cork(() => this.res.end())
    this.finish(200, bytesOut)
  }

  /**
   * Applies a write once nothing else the client sent can still take its answer away.
   * uWebSockets.js closes a connection when a pipelined request arrives while an earlier one
   * is unanswered, so a write applied before that would be applied with no answer sent. The
   * connection is paused (later requests wait in the socket), and the write starts on the next
   * turn of the event loop, by which time uWebSockets.js has parsed whatever came in the same
   * packet: if that closed the connection, the write is never started.
   */
  applyLater(fn: () => void): void {
    this.async()
    this.paused = true
    this.res.pause()
    setImmediate(() => {
      if (!this.aborted && !this.done) fn()
    })
  }

  /**
   * Stops reading the connection until resumeReading or the answer: a deferred request's
   * body then waits in the socket while the caller is looked up, instead of in memory.
   */
  holdReading(): void {
    if (this.paused) return
    this.paused = true
    this.res.pause()
  }

  resumeReading(): void {
    if (!this.paused) return
    this.paused = false
    this.res.resume()
  }

  /** Writes the status line and the header block (`first` is the first header's name). */
  private head(status: number, first: string, firstValue: string, extra: string): void {
    const res = this.res
    if (this.paused) {
      this.paused = false
      res.resume()
    }
    if (status !== 200) res.writeStatus(statusLine(status))
    let block = `${firstValue}\r\nX-Request-Id: ${this.id}`
    if (this.origin !== '') {
      const allowed = allowOrigin(this.ctx.config, this.origin)
      if (allowed !== '') block += `\r\nAccess-Control-Allow-Origin: ${allowed}${CORS_TAIL}`
      if (this.ctx.config.corsOrigins !== '*') block += '\r\nVary: Origin'
    }
    if (this.limit >= 0) {
      block += `\r\nRateLimit-Limit: ${this.limit}\r\nRateLimit-Remaining: ${this.remaining}\r\nRateLimit-Reset: ${this.reset}`
    }
    res.writeHeader(first, block + extra)
  }

  /** Answers with a JSON body; `extra` holds further header lines (see headerLines). */
  send(status: number, body: string | Buffer, extra = '', close = false): void {
    if (this.done || this.aborted) return
    const bytes = typeof body === 'string' ? Buffer.byteLength(body) : body.length
    if (this.headOnly) return this.sendHead(status, bytes, extra)
    // A body the client does not take at once is held (held-body.ts), and a closing answer's
    // body can be lost to the cork fault (cork-room.ts): either leaves the answer pending, and
    // uWS ends the process when a handler returns so with no abort handler.
    if (!this.asyncSet) this.res.onAborted(ignoreAbort)
    this.res.cork(() => {
      this.head(status, 'Content-Type', 'application/json', extra)
      endBody(this.res, body, close, bytes)
    })
    this.finish(status, bytes)
  }

  /**
   * Answers a HEAD with the headers `send` gives a JSON body of `bytes`: a caller whose body
   * costs something to build (a large value) gives its length instead.
   */
  sendHead(status: number, bytes: number, extra = ''): void {
    if (this.done || this.aborted) return
    this.res.cork(() => {
      this.head(status, 'Content-Type', 'application/json', extra)
      endHead(this.res, bytes)
    })
    this.finish(status, 0)
  }

  /** Answers without a body (304, 204). */
  empty(status: number, extra = ''): void {
    if (this.done || this.aborted) return
    this.res.cork(() => {
      this.head(status, 'Cache-Control', 'no-store', extra)
      this.res.endWithoutBody()
    })
    this.finish(status, 0)
  }

  /** Answers a check's refusal (refusal.ts). */
  refuse(r: Refusal): void {
    this.fail(r.code, r.message)
  }

  fail(code: ErrorCode, message?: string, extra = '', close = false, index?: number): void {
    if (this.done || this.aborted) return
    if (this.unreadBody) {
      this.unreadBody = false
      this.async()
      const answer = (cut: boolean) => this.fail(code, message, extra, close || cut, index)
      const stash = this.stash
      if (stash !== undefined) {
        // Already being read (deferred.ts), and the connection held: keep nothing more, let
        // the rest come, answer at its end.
        keepNothing(stash)
        if (stash.done) return answer(false)
        stash.onDone = () => {
          if (stash.done || stash.size > DRAIN_MAX) answer(!stash.done)
        }
        this.resumeReading()
        return
      }
      let seen = 0
      this.res.onData((chunk, isLast) => {
        seen += chunk.byteLength
        if (isLast || seen > DRAIN_MAX) answer(!isLast)
      })
      return
    }
    this.send(errorStatus(code), this.errorBody(code, message, index), extra, close)
  }

  /** An error's body: the contract's error object (an adapter with its own wire overrides it). */
  protected errorBody(code: ErrorCode, message?: string, index?: number): string {
    return errorText(code, message, index)
  }

  /**
   * Answers for anything thrown below a handler: an ApiError with a code of the contract's
   * table as itself, the rest as a 500 (a dashboard's code on /v1 is a bug, logged).
   */
  error(thrown: unknown): void {
    // Storage refusing for a reason the caller can act on is not a server error.
    const err = apiErrorOf(thrown)
    if (isContractError(err))
      return this.fail(err.code, err.message, headerLines(err.headers), false, err.index)
    const code = storeCode(err)
    const fault = storageFault(err)
    if (fault) {
      REFUSALS.warn(
        this.ctx.log,
        `${code} ${(err as Error).message}`,
        { reqId: this.id, err: (err as Error).message, errCode: code },
        'storage refused',
      )
      return this.fail(fault.code, fault.message, headerLines(fault.headers))
    }
    this.ctx.log.error(
      { reqId: this.id, err: (err as Error)?.message ?? String(err), errCode: code },
      'request failed',
    )
    this.fail('internal_error')
  }

  /**
   * The namespace this answer counts to: one the account holds (a request to a name it does
   * not hold counts to none, so no name can be made up to grow the counters), or the one a
   * namespace request just created or deleted.
   */
  private countsTo(status: number): string {
    const ns = this.ns
    if (ns === '') return ''
    if (this.account!.namespaces.has(ns)) return ns
    return this.op === OP.namespace && status < 400 ? ns : ''
  }

  private finish(status: number, bytesOut: number): void {
    if (this.done) return
    this.done = true
    const ctx = this.ctx
    ctx.lifecycle.inflight--
    if (this.account !== undefined && this.op >= 0) {
      // A request the client walked away from was still served (a PUT may have landed).
      ctx.usage.record(
        this.account.id,
        this.op,
        status === 499 ? 200 : status,
        this.bytesIn,
        bytesOut,
        ctx.clock.now(),
        this.count,
        this.countsTo(status),
      )
    }
    ctx.metrics.observe(this.route, status, (performance.now() - this.started) / 1000)
    if (status >= 500 && status !== 503)
      ctx.log.warn({ reqId: this.id, status, route: ROUTES[this.route] }, 'server error')
    else if (ctx.debug)
      ctx.log.debug({ reqId: this.id, status, route: ROUTES[this.route] }, 'request')
  }
}
