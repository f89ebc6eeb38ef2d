// The watch over a WebSocket: an upgrade on GET /v1/{namespace}?watch=1 sends the same events
// as JSON messages ({"type": "put" | "delete" | "progress", ...}). The API key comes in the
// x-api-key header or, where a browser cannot set one, in the first message ({"apiKey"}).
// With the key in a header, every refusal (the key, its namespace, the rate limit, the daily
// quota, the watch limit) is an HTTP answer before the upgrade. Everything after the upgrade
// that refuses the watch comes as {"type": "error", "code", "message"}, then a close.
import type { ApiKey } from '../services/accounts.js'
import type { Context } from '../context.js'
import { ERRORS, type ErrorCode, errorText, noSuchNamespace } from '../wire/errors.js'
import { requestAddress } from '../http/address.js'
import { ignoreAbort } from '../http/cork-room.js'
import { endBody } from '../http/held-body.js'
import { requestId } from '../http/request-id.js'
import { statusLine } from '../http/status.js'
import type { HttpRequest, HttpResponse } from '../http/uws.js'
import { type Bucket, newBucket, takeAccountToken } from '../services/limits.js'
import { quotaRefusal } from './quota.js'
import type { NamespaceInfo } from '../services/account-model.js'
import type { Change } from '../store/types.js'
import { OP } from '../services/usage.js'
import { parseQuery } from '../wire/query.js'
import { Route, parsePath } from './paths.js'
import {
  type WatchSink,
  WatchSession,
  dataOf,
  keyWorks,
  madeOnce,
} from '../services/watch-session.js'
import { MAX_UNSENT } from '../http/watch-sse.js'
import { BAD_SINCE, sinceOf } from '../wire/watch-start.js'

interface Peer {
  /** The client's address, for the per-address limit on wrong keys. */
  address: string
  ns: string
  prefix: string
  since: number | undefined
  secret: string
  started: boolean
  closed: boolean
  session: WatchSession | null
  timer: NodeJS.Timeout | null
  /** What was admitted before the upgrade (the key in a header): a watch taken, counted. */
  admitted: Admitted | null
}

interface Admitted {
  account: ApiKey['account']
  info: NamespaceInfo
  now: number
}

type Refusal = { code: ErrorCode; message?: string; header?: string }

/** Buffered bytes at or under which a socket counts as drained. */
const DRAINED = 64 * 1024
/**
 * How often a socket that is not drained is looked at again. Polled, so a wait cannot miss
 * its wake-up: waiting on uWS's drain event instead, one full test run saw a watch wait 30 s
 * for a client that had read everything sent to it.
 */
const DRAIN_POLL_MS = 5

interface Socket {
  getUserData(): Peer
  send(message: string, isBinary?: boolean): number
  getBufferedAmount(): number
  cork(cb: () => void): void
  end(code?: number, reason?: string): void
}

/** How long a socket may wait for its first message when the key was not in a header. */
const KEY_WAIT_MS = 10_000
const BEARER = /^bearer\s+(\S+)\s*$/i

function refuse(res: HttpResponse, code: ErrorCode, message?: string): void {
  res.onAborted(ignoreAbort)
  answer(res, { code, message })
}

/** Writes a refusal as HTTP (the response's abort handler already set). */
function answer(res: HttpResponse, r: Refusal): void {
  res.cork(() => {
    res.writeStatus(statusLine(ERRORS[r.code].status))
    res.writeHeader('Content-Type', 'application/json')
    if (r.header !== undefined) res.writeHeader('Retry-After', r.header)
    endBody(res, errorText(r.code, r.message))
  })
}

/** An event as a WebSocket message: the event's data with its type first. */
function message(type: string, data: string): string {
  return `{"type":"${type}",${data.slice(1)}`
}

/** A change's message, made once however many watchers it goes to. */
const messageOf = madeOnce((c: Change) => message(c.type, dataOf(c)))

function sinkOf(ws: Socket): WatchSink {
  const peer = ws.getUserData()
  let pending: string[] = []
  return {
    event(type, data) {
      pending.push(message(type, data))
    },
    whole(changes) {
      for (const c of changes) pending.push(messageOf(c))
    },
    flush() {
      const out = pending
      pending = []
      if (peer.closed || out.length === 0) return true
      let dropped = false
      // One cork: the group's messages leave in one write.
      ws.cork(() => {
        for (const m of out) if (ws.send(m) === 2) dropped = true
      })
      return !dropped && ws.getBufferedAmount() <= MAX_UNSENT
    },
    drained() {
      return new Promise((resolve) => {
        const look = () => {
          if (peer.closed || ws.getBufferedAmount() <= DRAINED) resolve()
          else setTimeout(look, DRAIN_POLL_MS)
        }
        look()
      })
    },
    fail(code, message) {
      if (peer.closed) return
      ws.send(JSON.stringify({ type: 'error', code, message }))
      peer.closed = true
      ws.end(1008, code)
    },
    end() {
      if (peer.closed) return
      peer.closed = true
      ws.end(1001, 'server stopping')
    },
  }
}

/** uWebSockets.js's behaviour for /v1/*: only a watch may be upgraded. */
export function watchSockets(ctx: Context) {
  const fail = (ws: Socket, code: ErrorCode, message?: string) =>
    sinkOf(ws).fail(code, message ?? ERRORS[code].message)

  /**
   * Everything that may refuse a watch before its events start, in the order a request meets
   * them: the key, its namespace, the rate limit, the daily quota, the namespace, the watch
   * limit (across front ends). Admitted, the watch is held and the request counted.
   */
  async function admit(secret: string, ns: string, address: string): Promise<Admitted | Refusal> {
    const key: ApiKey | undefined = await ctx.accounts.authenticate(secret)
    if (key === undefined) {
      // Guessing keys over sockets is as slow as over requests (limits.ts).
      const b = ctx.badKeys.take(address, ctx.clock.now())
      return b.ok
        ? { code: 'unauthorized' }
        : { code: 'rate_limited', header: String(b.retryAfter) }
    }
    if (!key.allows(ns))
      return { code: 'forbidden', message: `This API key may not use namespace "${ns}".` }
    const account = key.account
    const plan = ctx.plans.get(account.rec.plan)
    const now = ctx.clock.now()
    const out: Bucket = newBucket()
    const b = await takeAccountToken(ctx.store.limiter, account.id, plan, now, out)
    if (!b.ok) return { code: 'rate_limited', header: String(b.retryAfter) }
    const refused = quotaRefusal(ctx, account, plan, 1, now)
    if (refused !== null) return { code: refused.code, header: String(refused.retryAfter) }
    const info = await ctx.accounts.namespace(account, ns)
    if (info === undefined) return { code: 'namespace_not_found', message: noSuchNamespace(ns) }
    if (!(await ctx.watches.take(account.id, plan.maxWatches)))
      return {
        code: 'watch_limit',
        message: `The ${plan.id} plan allows ${plan.maxWatches} watches open at once.`,
      }
    ctx.usage.record(account.id, OP.watch, 200, 0, 0, now, 1, info.name)
    return { account, info, now }
  }

  /** The key came in the first message: what refuses it is an error message, then a close. */
  async function begin(ws: Socket, secret: string): Promise<void> {
    const peer = ws.getUserData()
    peer.started = true
    if (peer.timer) clearTimeout(peer.timer)
    peer.secret = secret
    const got = await admit(secret, peer.ns, peer.address)
    if ('code' in got) return fail(ws, got.code, got.message)
    if (peer.closed) return ctx.watches.release(got.account.id)
    await run(ws, got)
  }

  async function run(ws: Socket, got: Admitted): Promise<void> {
    const peer = ws.getUserData()
    const session = new WatchSession(
      ctx,
      got.account,
      got.info.storeName,
      peer.prefix,
      sinkOf(ws),
      keyWorks(ctx, peer.secret, got.account),
    )
    peer.session = session
    const ready = await session.prepare(peer.since)
    if (ready !== true) return fail(ws, ready.code, ready.message)
    if (peer.closed) return session.stop(false)
    await session.run()
  }

  const start = (ws: Socket, go: () => Promise<void>) =>
    go().catch((err) => {
      ctx.log.warn({ err: (err as Error).message }, 'watch failed')
      fail(ws, 'internal_error')
    })

  return {
    maxPayloadLength: 16 * 1024,
    idleTimeout: 120,
    sendPingsAutomatically: true,
    maxBackpressure: 4 * MAX_UNSENT,
    upgrade(res: HttpResponse, req: HttpRequest, context: unknown): void {
      const parsed = parsePath(req.getUrl(), { route: Route.NotFound, ns: '', rawKey: '' })
      const q = parseQuery(req.getQuery() ?? '')
      if (!(q instanceof URLSearchParams)) return refuse(res, 'invalid_request', q.message)
      if (parsed.route !== Route.Keys || q.get('watch') !== '1')
        return refuse(
          res,
          'not_found',
          'Only a watch (GET /v1/{namespace}?watch=1) takes a WebSocket.',
        )
      if (ctx.lifecycle.stopping) return refuse(res, 'unavailable')
      const since = sinceOf(req.getHeader('last-event-id'), q.get('since'))
      if (since === null) return refuse(res, 'invalid_request', BAD_SINCE)
      const auth = BEARER.exec(req.getHeader('authorization'))
      const secret = req.getHeader('x-api-key') || (auth ? auth[1]! : '')
      const address = requestAddress(res, req, ctx.config.trustProxy)
      const peer: Peer = {
        address,
        ns: parsed.ns,
        prefix: q.get('prefix') ?? '',
        since,
        secret,
        started: false,
        closed: false,
        session: null,
        timer: null,
        admitted: null,
      }
      const wsKey = req.getHeader('sec-websocket-key')
      const protocol = req.getHeader('sec-websocket-protocol')
      const extensions = req.getHeader('sec-websocket-extensions')
      const id = requestId(req.getHeader('x-request-id'))
      // Every answer carries X-Request-Id, the 101 too: its status goes first, or uWebSockets.js
      // writes 200 ahead of the header.
      const upgrade = () =>
        res
          .writeStatus('101 Switching Protocols')
          .writeHeader('X-Request-Id', id)
          .upgrade(peer, wsKey, protocol, extensions, context as never)
      if (secret === '') return upgrade()
      let aborted = false
      res.onAborted(() => {
        aborted = true
      })
      admit(secret, parsed.ns, address).then(
        (got) => {
          if (aborted) {
            if (!('code' in got)) ctx.watches.release(got.account.id)
            return
          }
          if ('code' in got) return answer(res, got)
          peer.admitted = got
          peer.started = true
          res.cork(upgrade)
        },
        (err) => {
          ctx.log.warn({ err: (err as Error).message }, 'watch failed')
          if (!aborted) answer(res, { code: 'internal_error' })
        },
      )
    },
    open(ws: Socket): void {
      const peer = ws.getUserData()
      const admitted = peer.admitted
      if (admitted !== null) return void start(ws, () => run(ws, admitted))
      peer.timer = setTimeout(
        () => fail(ws, 'unauthorized', 'Send {"apiKey": "..."} first.'),
        KEY_WAIT_MS,
      )
    },
    message(ws: Socket, message: ArrayBuffer): void {
      const peer = ws.getUserData()
      if (peer.started) return
      let secret = ''
      try {
        const m = JSON.parse(Buffer.from(message).toString('utf8'))
        if (m && typeof m.apiKey === 'string') secret = m.apiKey
      } catch {}
      void start(ws, () => begin(ws, secret))
    },
    close(ws: Socket): void {
      const peer = ws.getUserData()
      peer.closed = true
      if (peer.timer) clearTimeout(peer.timer)
      peer.session?.stop(false)
    },
  }
}
