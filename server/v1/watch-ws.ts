// The watch over a WebSocket: an upgrade on GET /v1/{namespace}?watch=1 sends the same events
// as JSON messages ({"type": "put" | "delete" | "progress", ...}). The API key comes in the
// x-api-key header or, where a browser cannot set one, in the first message ({"apiKey"}).
// Everything after the upgrade that refuses the watch comes as {"type": "error", "code",
// "message"}, then a close.
import type { ApiKey } from '../services/accounts.js'
import type { Context } from '../context.js'
import { ERRORS, type ErrorCode, errorText } from '../wire/errors.js'
import { requestAddress } from '../http/address.js'
import { ignoreAbort } from '../http/cork-room.js'
import { endBody } from '../http/held-body.js'
import { requestId } from '../http/request-id.js'
import { statusLine } from '../http/status.js'
import type { HttpRequest, HttpResponse } from '../http/uws.js'
import { type Bucket, newBucket, takeAccountToken } from '../services/limits.js'
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
}

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
  res.cork(() => {
    res.writeStatus(statusLine(ERRORS[code].status))
    res.writeHeader('Content-Type', 'application/json')
    endBody(res, errorText(code, message))
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

  async function begin(ws: Socket, secret: string): Promise<void> {
    const peer = ws.getUserData()
    peer.started = true
    if (peer.timer) clearTimeout(peer.timer)
    const key: ApiKey | undefined =
      secret === '' ? undefined : await ctx.accounts.authenticate(secret)
    if (peer.closed) return
    if (key === undefined) {
      // Guessing keys over sockets is as slow as over requests (limits.ts).
      const b = ctx.badKeys.take(peer.address, Date.now())
      return fail(ws, b.ok ? 'unauthorized' : 'rate_limited')
    }
    if (!key.allows(peer.ns))
      return fail(ws, 'forbidden', `This API key may not use namespace "${peer.ns}".`)
    const account = key.account
    const plan = ctx.plans.get(account.rec.plan)
    const now = Date.now()
    const out: Bucket = newBucket()
    const b = await takeAccountToken(ctx.store.limiter, account.id, plan, now, out)
    if (peer.closed) return
    if (!b.ok) return fail(ws, 'rate_limited')
    if (
      plan.requestsPerDay !== null &&
      ctx.usage.today(account.id, now).requests >= plan.requestsPerDay
    )
      return fail(ws, 'quota_exceeded')
    const info = await ctx.accounts.namespace(account, peer.ns)
    if (peer.closed) return
    if (info === undefined)
      return fail(ws, 'namespace_not_found', `There is no namespace "${peer.ns}".`)
    if (!ctx.watches.take(account.id, plan.maxWatches))
      return fail(
        ws,
        'watch_limit',
        `The ${plan.id} plan allows ${plan.maxWatches} watches open at once.`,
      )
    ctx.usage.record(account.id, OP.watch, 200, 0, 0, now, 1, info.name)
    const session = new WatchSession(
      ctx,
      account,
      info.storeName,
      peer.prefix,
      sinkOf(ws),
      keyWorks(ctx, secret, account),
    )
    peer.session = session
    const ready = await session.prepare(peer.since)
    if (ready !== true) return fail(ws, ready.code, ready.message)
    if (peer.closed) return session.stop(false)
    await session.run()
  }

  /**
   * With the key in a header, what can be told before the upgrade is answered as HTTP, with
   * the contract's status (the watch limit a 429): a store that answers at once (the
   * embedded one) says whether the key, its namespace and a watch slot are there. What needs
   * the store to be asked is told after the upgrade, as an error message (begin).
   */
  function refusal(secret: string, ns: string, address: string): [ErrorCode, string?] | undefined {
    const key = ctx.accounts.authenticate(secret)
    if (key instanceof Promise) {
      key.catch(() => {})
      return undefined
    }
    if (key === undefined)
      return [ctx.badKeys.take(address, Date.now()).ok ? 'unauthorized' : 'rate_limited']
    if (!key.allows(ns)) return ['forbidden', `This API key may not use namespace "${ns}".`]
    const info = ctx.accounts.namespace(key.account, ns)
    if (info instanceof Promise) {
      info.catch(() => {})
      return undefined
    }
    if (info === undefined) return ['namespace_not_found', `There is no namespace "${ns}".`]
    const plan = ctx.plans.get(key.account.rec.plan)
    if (plan.maxWatches !== null && ctx.watches.held(key.account.id) >= plan.maxWatches)
      return ['watch_limit', `The ${plan.id} plan allows ${plan.maxWatches} watches open at once.`]
    return undefined
  }

  const start = (ws: Socket, secret: string) =>
    begin(ws, secret).catch((err) => {
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
      const early = secret === '' ? undefined : refusal(secret, parsed.ns, address)
      if (early) return refuse(res, early[0], early[1])
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
      }
      // Every answer carries X-Request-Id, the 101 too: its status goes first, or uWebSockets.js
      // writes 200 ahead of the header.
      res
        .writeStatus('101 Switching Protocols')
        .writeHeader('X-Request-Id', requestId(req.getHeader('x-request-id')))
      res.upgrade(
        peer,
        req.getHeader('sec-websocket-key'),
        req.getHeader('sec-websocket-protocol'),
        req.getHeader('sec-websocket-extensions'),
        context as never,
      )
    },
    open(ws: Socket): void {
      const peer = ws.getUserData()
      if (peer.secret !== '') return void start(ws, peer.secret)
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
      void start(ws, secret)
    },
    close(ws: Socket): void {
      const peer = ws.getUserData()
      peer.closed = true
      if (peer.timer) clearTimeout(peer.timer)
      peer.session?.stop(false)
    },
  }
}
