// GET /v1/{namespace}?watch=1&prefix=&since=, as Server-Sent Events: the watch's events on a
// response that stays open. Everything that can refuse the watch (a bad since, the plan's
// watch limit, history that no longer reaches back) answers before the stream opens, with
// the contract's error body and status.
import type { HttpRequest } from '../http/uws.js'
import type { NamespaceInfo } from '../services/account-model.js'
import type { Plan } from '../services/plans.js'
import { OP } from '../services/usage.js'
import type { Call } from './call.js'
import { withNamespace } from './checks.js'
import type { Parsed } from './paths.js'
import { WatchSession, keyWorks } from '../services/watch-session.js'
import { responseOut } from '../http/stream-out.js'
import { type SseOut, SseSink } from '../http/watch-sse.js'
import { BAD_SINCE, WATCH_HEAD, sinceOf } from '../wire/watch-start.js'

/** The call's response as a stream for SseSink, counting the bytes it sends. */
function callOut(call: Call): SseOut {
  let bytes = 0
  return responseOut(call.res, {
    closed: () => call.aborted || call.done,
    end: () => call.endStream(bytes),
    sent: (n) => {
      bytes += n
    },
  })
}

export function watchChanges(
  call: Call,
  req: HttpRequest,
  parsed: Parsed,
  plan: Plan,
  q: URLSearchParams,
): void {
  call.op = OP.watch
  if (call.headOnly) return call.fail('method_not_allowed', WATCH_HEAD, '\r\nAllow: GET')
  if (!req.getHeader('accept').includes('text/event-stream'))
    return call.fail(
      'invalid_request',
      'watch=1 streams Server-Sent Events: send Accept: text/event-stream, or open a WebSocket on this URL.',
    )
  const since = sinceOf(req.getHeader('last-event-id'), q.get('since'))
  if (since === null) return call.fail('invalid_request', BAD_SINCE)
  const from = since
  const prefix = q.get('prefix') ?? ''
  const ctx = call.ctx
  const account = call.account!
  withNamespace(call, parsed.ns, (info) => {
    const limit = () =>
      call.fail(
        'watch_limit',
        `The ${plan.id} plan allows ${plan.maxWatches} watches open at once.`,
      )
    const took = ctx.watches.take(account.id, plan.maxWatches)
    if (took === false) return limit()
    call.async()
    if (took !== true) {
      // Another front end's watches count too: the store is asked.
      took.then(
        (ok) => {
          if (!ok) return limit()
          if (call.aborted) return ctx.watches.release(account.id)
          open(info)
        },
        (err) => call.error(err),
      )
      return
    }
    open(info)
  })

  function open(info: NamespaceInfo): void {
    const sink = new SseSink()
    const session = new WatchSession(
      ctx,
      account,
      info.storeName,
      prefix,
      sink,
      keyWorks(ctx, call.secret, account),
    )
    call.onAbort = () => session.stop(false)
    session.prepare(from).then(
      (ok) => {
        if (ok !== true) return call.fail(ok.code, ok.message)
        if (call.aborted) return session.stop(false)
        // The request is counted when the stream opens; its events apart (usage.ts).
        ctx.usage.record(account.id, OP.watch, 200, call.bytesIn, 0, ctx.clock.now(), 1, info.name)
        call.op = -1
        call.openStream('text/event-stream', '\r\nCache-Control: no-store\r\nX-Accel-Buffering: no')
        sink.attach(callOut(call))
        void session.run()
      },
      (err) => {
        session.release()
        call.error(err)
      },
    )
  }
}
