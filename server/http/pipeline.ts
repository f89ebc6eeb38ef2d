// The request pipeline of the dashboard and the operator endpoint over uWebSockets.js: one
// place for bodies (read whole, up to a limit), framing checks, errors (ApiError
// and storage faults become the contract's error body; anything else a logged
// 500), in-flight accounting and the shutdown drain, and metrics. A uWS request object dies
// when the synchronous handler returns, so everything a handler may need later (headers,
// cookies, the client address, the body) is copied into a plain Req first; the Reply is
// written in one cork. (/v1 has its own allocation-light path, v1/call.ts, over the same
// wire rules.)
import type { Context } from '../context.js'
import { ApiError } from '../wire/errors.js'
import { R, ROUTES } from '../metrics.js'
import { storageFault } from '../services/storage-faults.js'
import { apiErrorOf } from '../services/store-errors.js'
import { jsonContentType } from '../wire/content-type.js'
import { clientAddress } from './address.js'
import { bodyFraming } from './framing.js'
import { endHead } from './head.js'
import { endBody } from './held-body.js'
import { statusLine } from './status.js'
import { type ResponseOut, responseOut } from './stream-out.js'
import type { HttpRequest, HttpResponse, TemplatedApp } from './uws.js'

export interface Req {
  method: string
  path: string
  query: URLSearchParams
  params: string[]
  headers: Record<string, string>
  cookies: Record<string, string>
  ip: string
  /** The browser reached us (or our trusted proxy) over TLS: cookies get Secure. */
  secure: boolean
  body: Buffer
  /** Where the body went instead of `body`, when its route's BodyLimit answered a sink. */
  sink?: BodySink
}

/**
 * Takes a body as it arrives, chunk by chunk, instead of it being held whole (an import's
 * file goes to disk as it comes). `take` may refuse the body at any chunk with a Reply (sent
 * at once). `drop` lets go of what the sink holds: called when the client leaves or the body
 * is refused; the handler calls it too once it is done.
 */
export interface BodySink {
  /** The most bytes taken; past it, 413 and the connection closes. */
  max: number
  take(chunk: Buffer): Reply | undefined
  drop(): void
}

export interface Reply {
  status: number
  headers?: Record<string, string>
  setCookies?: string[]
  body?: string | Buffer
  /**
   * A streamed answer (a watch's events) instead of `body`: the status and headers are sent,
   * then this is called with the open response, which stays open until `out.end()` or the
   * client leaves. It is called even when the client left first (`out.closed` is then true
   * and `out.onClose` runs right after), so whatever the handler holds is always let go.
   */
  stream?: (out: StreamOut) => void
}

/**
 * An open streamed response (stream-out.ts): end() counts it as answered, and once closed
 * (ended, or the client left) writes are dropped.
 */
export interface StreamOut extends ResponseOut {
  /** Set by the handler: runs once if the client leaves before end(). */
  onClose?: () => void
}

export type Method = 'get' | 'post' | 'put' | 'patch' | 'del' | 'any'

const HEADERS_WANTED = [
  'accept-encoding',
  'content-length',
  'content-type',
  'cookie',
  'accept',
  'host',
  'if-match',
  'if-none-match',
  'last-event-id',
  'origin',
  'referer',
  'sec-fetch-site',
  'stripe-signature',
  'x-csrf-token',
  'x-forwarded-for',
  'x-forwarded-proto',
  'x-operator-token',
]

// Pages cannot be framed and run only our own scripts. uPlot sets styles through the
// CSSOM, which style-src 'self' allows.
const SECURITY_HEADERS: [string, string][] = [
  [
    'Content-Security-Policy',
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  ],
  ['X-Content-Type-Options', 'nosniff'],
  ['X-Frame-Options', 'DENY'],
  ['Referrer-Policy', 'same-origin'],
]

export function parseCookies(header: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq < 1) continue
    const name = part.slice(0, eq).trim()
    if (!(name in out)) out[name] = part.slice(eq + 1).trim()
  }
  return out
}

/** The last entry of a list header: the one our own proxy wrote. */
function lastEntry(value: string): string {
  return value.slice(value.lastIndexOf(',') + 1).trim()
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s)
  } catch {
    return s
  }
}

export function jsonReply(status: number, body: unknown, extra: Partial<Reply> = {}): Reply {
  return {
    ...extra,
    status,
    headers: {
      'Content-Type': 'application/json; charset=utf-8',
      'Cache-Control': 'no-store',
      ...extra.headers,
    },
    body: JSON.stringify(body),
  }
}

export function fail(status: number, code: string, message: string, extra: Partial<Reply> = {}) {
  return jsonReply(status, { error: { code, message } }, extra)
}

/** The answer for an error the account, namespace and data services raise; others rethrow. */
export function errorReply(thrown: unknown): Reply {
  // A store's refusal (a namespace dropped meanwhile, a condition) means what it means on /v1.
  const err = apiErrorOf(thrown)
  if (err instanceof ApiError)
    return fail(err.status, err.code, err.message, { headers: err.headers })
  const fault = storageFault(err)
  if (fault) return fail(fault.status, fault.code, fault.message, { headers: fault.headers })
  throw err
}

/** The body as a JSON object; ApiError when it is not one. */
export function readJson(req: Req): Record<string, unknown> {
  if (!jsonContentType(req.headers['content-type']!)) {
    throw new ApiError(
      415,
      'unsupported_media_type',
      'Send JSON with Content-Type: application/json.',
    )
  }
  let body: unknown
  try {
    body = JSON.parse(req.body.toString('utf8') || '{}')
  } catch {
    throw new ApiError(400, 'invalid_json', 'The request body is not valid JSON.')
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new ApiError(400, 'invalid_request', 'The request body must be a JSON object.')
  return body as Record<string, unknown>
}

function writeHead(res: HttpResponse, reply: Reply): void {
  res.writeStatus(statusLine(reply.status))
  for (const [k, v] of SECURITY_HEADERS) res.writeHeader(k, v)
  for (const k in reply.headers) res.writeHeader(k, reply.headers[k]!)
  for (const c of reply.setCookies ?? []) res.writeHeader('Set-Cookie', c)
}

function write(res: HttpResponse, reply: Reply, close: boolean, head: boolean): void {
  writeHead(res, reply)
  const body = reply.body ?? ''
  // No arguments: uWS then writes no Content-Length (given undefined it writes a bogus one).
  if (reply.status === 304) res.endWithoutBody()
  else if (head) endHead(res, Buffer.byteLength(body))
  else endBody(res, body, close)
}

/**
 * The StreamOut of a response whose head is written (`gone`: the client left before that;
 * nothing is written then). `done` runs once, when the stream ends or the client leaves;
 * `abort` is what the route calls when uWebSockets.js says the client left.
 */
function streamOut(res: HttpResponse, gone: boolean, done: () => void) {
  let closed = gone
  let left = false
  const raw = responseOut(res, {
    closed: () => closed,
    end() {
      if (closed) return
      closed = true
      res.cork(() => res.end())
      done()
    },
  })
  const out: StreamOut & { abort(): void } = {
    get closed() {
      return closed
    },
    write(data) {
      return closed ? true : raw.write(data)
    },
    onWritable(fn) {
      if (closed) return
      raw.onWritable(() => {
        if (!closed) fn()
      })
    },
    end: raw.end,
    abort() {
      if (left) return
      left = true
      if (!closed) {
        closed = true
        done()
      }
      out.onClose?.()
    },
  }
  return out
}

/** A request's body limit (or sink), looked up from its head; see route. */
export type BodyLimit = (req: Req) => number | Reply | BodySink | Promise<number | Reply | BodySink>

/**
 * Registers `handler` for `method pattern`. Bodies of non-GET requests are read whole, up
 * to `maxBody` bytes (past that the answer is 413 and the connection closes). A function is
 * asked afresh for each request; it may answer later (a promise), or answer the request
 * itself (a Reply, such as a 401 for a caller who may send no body at all), and until it
 * does the connection is not read: a body is held only once it is known to be allowed.
 */
export function route(
  app: TemplatedApp,
  ctx: Context,
  method: Method,
  pattern: string,
  maxBody: number | BodyLimit,
  handler: (req: Req) => Promise<Reply> | Reply,
  /** The metrics label its answers count under (metrics.ts ROUTES). */
  metric: number = R.dashboard,
): void {
  const paramCount = (pattern.match(/\/:/g) ?? []).length
  const serve = (res: HttpResponse, uwsReq: HttpRequest) => {
    const started = performance.now()
    const headers: Record<string, string> = {}
    for (const h of HEADERS_WANTED) headers[h] = uwsReq.getHeader(h)
    const params: string[] = []
    for (let i = 0; i < paramCount; i++) params.push(safeDecode(uwsReq.getParameter(i) ?? ''))
    const trust = ctx.config.trustProxy
    const req: Req = {
      method: uwsReq.getMethod().toUpperCase(),
      path: uwsReq.getUrl(),
      query: new URLSearchParams(uwsReq.getQuery() ?? ''),
      params,
      headers,
      cookies: parseCookies(headers.cookie!),
      ip: clientAddress(res, trust ? headers['x-forwarded-for']! : '', trust),
      secure: trust && lastEntry(headers['x-forwarded-proto']!).toLowerCase() === 'https',
      body: Buffer.alloc(0),
    }
    ctx.lifecycle.inflight++
    let done = false
    let aborted = false
    let stream: ReturnType<typeof streamOut> | undefined
    const settle = (status: number) => {
      ctx.lifecycle.inflight--
      ctx.metrics.observe(metric, status, (performance.now() - started) / 1000)
      if (ctx.debug) ctx.log.debug({ status, route: ROUTES[metric], path: req.path }, 'request')
    }
    const finish = (reply: Reply, close = false) => {
      if (reply.stream && (done || req.method === 'HEAD')) {
        // The client left before the stream opened, or asked for its head only: the
        // handler still lets go of its hold.
        if (!done && !aborted) {
          res.cork(() => {
            writeHead(res, reply)
            res.endWithoutBody()
          })
          settle(reply.status)
        }
        done = true
        const gone = streamOut(res, true, () => {})
        reply.stream(gone)
        return gone.abort()
      }
      if (done) return
      done = true
      if (reply.stream) {
        // In flight (the shutdown drain waits for it) until it ends.
        res.cork(() => writeHead(res, reply))
        stream = streamOut(res, false, () => settle(reply.status))
        return reply.stream(stream)
      }
      if (!aborted) res.cork(() => write(res, reply, close, req.method === 'HEAD'))
      settle(reply.status)
    }
    res.onAborted(() => {
      aborted = true
      req.sink?.drop()
      if (stream) stream.abort()
      else finish({ status: 499 })
    })
    if (ctx.lifecycle.stopping) {
      return finish(
        fail(503, 'unavailable', 'The server is shutting down; try again shortly.', {
          headers: { 'Retry-After': '5' },
        }),
        true,
      )
    }
    const framing = req.method === 'GET' || req.method === 'HEAD' ? '' : bodyFraming(uwsReq)
    if (framing !== '') return finish(fail(400, 'invalid_request', framing), true)
    const run = () => {
      // As on /v1 (Call.applyLater): a change starts only after uWebSockets.js has parsed
      // what came with the request, so a connection it closes never has a change applied.
      if (aborted) return
      Promise.resolve()
        .then(() => handler(req))
        .then(finish, (err) => {
          ctx.log.error(
            { err: (err as Error)?.message ?? String(err), path: req.path },
            'request failed',
          )
          finish(fail(500, 'internal_error', 'Something went wrong on our side.'))
        })
    }
    if (req.method === 'GET' || req.method === 'HEAD') return run()
    const given = typeof maxBody === 'number' ? maxBody : maxBody(req)
    // -1 while the limit is being looked up: the connection is paused meanwhile, so what is
    // held is at most what arrived with the request's head.
    let limit = -1
    const chunks: Buffer[] = []
    let size = 0
    let complete = false
    const tooLarge = () => {
      req.sink?.drop()
      finish(fail(413, 'value_too_large', 'The request body is too large.'), true)
    }
    const bodyIn = () => {
      req.body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)
      chunks.length = 0
      setImmediate(run)
    }
    /** Hands a chunk to the sink; false once the sink has refused the body (answered). */
    const sinkTake = (chunk: Buffer) => {
      const refused = req.sink!.take(chunk)
      if (refused === undefined) return true
      req.sink!.drop()
      finish(refused)
      return false
    }
    res.onData((chunk, isLast) => {
      if (done) return
      size += chunk.byteLength
      if (limit >= 0 && size > limit) return tooLarge()
      // uWS reuses the chunk's memory once this callback returns.
      const copy = Buffer.copyBytesFrom(new Uint8Array(chunk))
      if (limit >= 0 && req.sink !== undefined) {
        if (!sinkTake(copy)) return
      } else chunks.push(copy)
      if (!isLast) return
      complete = true
      if (limit < 0) return
      if (req.sink === undefined) bodyIn()
      else setImmediate(run)
    })
    const known = (l: number | Reply | BodySink) => {
      if (done || aborted) return
      if (typeof l === 'object' && 'take' in l) {
        req.sink = l
        limit = l.max
        if (size > limit) return tooLarge()
        // What arrived while the limit was looked up goes first.
        for (const c of chunks.splice(0)) if (!sinkTake(c)) return
        if (complete) setImmediate(run)
        return
      }
      // Answered from the head: uWebSockets.js drops the rest of the body as it comes.
      if (typeof l !== 'number') return finish(l)
      limit = l
      if (size > limit) return tooLarge()
      if (complete) bodyIn()
    }
    if (!(given instanceof Promise)) return known(given)
    res.pause()
    given.then(
      (l) => {
        if (!done && !aborted) res.resume()
        known(l)
      },
      (err) => {
        ctx.log.error(
          { err: (err as Error)?.message ?? String(err), path: req.path },
          'request failed',
        )
        if (!done && !aborted) res.resume()
        finish(fail(500, 'internal_error', 'Something went wrong on our side.'), true)
      },
    )
  }
  app[method](pattern, serve)
  // HEAD is GET without the body (write, endHead).
  if (method === 'get') app.head(pattern, serve)
}
