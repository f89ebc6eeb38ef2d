// GET /v1/{namespace}?watch=1&prefix=&since=, as Server-Sent Events: the watch's events on a
// response that stays open. Everything that can refuse the watch (a bad since, the plan's
// watch limit, history that no longer reaches back) answers before the stream opens, with
// the contract's error body and status.
import type { HttpRequest } from '../http/uws.js'
import type { Plan } from '../plans.js'
import { OP } from '../usage.js'
import type { Call } from './call.js'
import { withNamespace } from './entries.js'
import type { Parsed } from './paths.js'
import { type WatchSink, WatchSession } from './watch-session.js'

/** Bytes written while the client has not taken them yet, past which the watch is too slow. */
export const MAX_UNSENT = 1024 * 1024
const VERSION = /^(0|[1-9][0-9]{0,15})$/

/** Where a watch starts: Last-Event-ID (an EventSource's reconnection) before since. */
export function sinceOf(lastEventId: string, since: string | null): number | undefined | null {
  const text = lastEventId !== '' ? lastEventId.trim() : since
  if (text === null || text === '') return undefined
  return VERSION.test(text) ? Number(text) : null
}

function sseSink(call: Call): WatchSink & { bytes: number } {
  const res = call.res
  let unsent = 0
  let waiting = false
  let pending = ''
  const sink = {
    bytes: 0,
    event(type: string, data: string, version: number): void {
      pending += `event: ${type}\nid: ${version}\ndata: ${data}\n\n`
    },
    flush(): boolean {
      const text = pending
      pending = ''
      if (call.aborted || call.done || text === '') return true
      sink.bytes += text.length
      let ok = true
      res.cork(() => {
        ok = res.write(text)
      })
      if (ok && !waiting) return true
      unsent += text.length
      if (!waiting) {
        waiting = true
        res.onWritable(() => {
          waiting = false
          unsent = 0
          return true
        })
      }
      return unsent <= MAX_UNSENT
    },
    fail(code: string, message: string): void {
      pending = ''
      if (call.aborted || call.done) return
      const text = `event: error\ndata: ${JSON.stringify({ code, message })}\n\n`
      res.cork(() => res.write(text))
      call.endStream(sink.bytes + text.length)
    },
    end(): void {
      call.endStream(sink.bytes)
    },
  }
  return sink
}

export function watchChanges(
  call: Call,
  req: HttpRequest,
  parsed: Parsed,
  plan: Plan,
  q: URLSearchParams,
): void {
  call.op = OP.watch
  if (!req.getHeader('accept').includes('text/event-stream'))
    return call.fail(
      'invalid_request',
      'watch=1 streams Server-Sent Events: send Accept: text/event-stream, or open a WebSocket on this URL.',
    )
  const since = sinceOf(req.getHeader('last-event-id'), q.get('since'))
  if (since === null)
    return call.fail('invalid_request', 'since (or Last-Event-ID) is a version: digits.')
  const prefix = q.get('prefix') ?? ''
  const ctx = call.ctx
  const account = call.account!
  withNamespace(call, parsed.ns, (info) => {
    if (!ctx.watches.take(account.id, plan.maxWatches))
      return call.fail(
        'watch_limit',
        `The ${plan.id} plan allows ${plan.maxWatches} watches open at once.`,
      )
    call.async()
    const sink = sseSink(call)
    const session = new WatchSession(ctx, account, info.storeName, prefix, sink)
    call.onAbort = () => session.stop(false)
    session.prepare(since).then(
      (ok) => {
        if (!ok) return call.fail('history_expired')
        if (call.aborted) return session.stop(false)
        // The request is counted when the stream opens; its events apart (usage.ts).
        ctx.usage.record(account.id, OP.watch, 200, call.bytesIn, 0, Date.now())
        call.op = -1
        call.openStream('text/event-stream', '\r\nCache-Control: no-store\r\nX-Accel-Buffering: no')
        void session.run()
      },
      (err) => {
        session.release()
        call.error(err)
      },
    )
  })
}
