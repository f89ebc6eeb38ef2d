// The data browser's live view: GET /dashboard/api/namespaces/{name}/watch?prefix=&since= as
// Server-Sent Events, for the signed-in account's own namespace. It is /v1's watch (the same
// WatchSession, history and resume by Last-Event-ID, too_slow) on the dashboard's cookie
// session, and it counts as /v1's does: one `watch` request when it opens, its events as
// watch events, and one of the plan's concurrent watches while it stays open.
import type { Context } from '../context.js'
import { ApiError } from '../wire/errors.js'
import { apiErrorOf } from '../services/store-errors.js'
import type { Reply, Req } from '../http/pipeline.js'
import { OP } from '../services/usage.js'
import { type Refusal, WatchSession } from '../services/watch-session.js'
import { SseSink } from '../http/watch-sse.js'
import { BAD_SINCE, WATCH_HEAD, sinceOf } from '../wire/watch-start.js'
import { type Caller, checkSameOrigin } from './guard.js'

/** How long an EventSource waits before it reconnects after the stream ends. */
const RETRY_MS = 2000

export class WatchApi {
  constructor(private ctx: Context) {}

  async open(req: Req, c: Caller): Promise<Reply> {
    // A watch holds one of the plan's slots and counts as a request: only this site's own
    // pages may open one (the cookie alone does not say where the request came from).
    checkSameOrigin(req)
    if (req.method === 'HEAD')
      throw new ApiError(405, 'method_not_allowed', WATCH_HEAD, {
        Allow: 'GET',
      })
    const since = sinceOf(req.headers['last-event-id']!, req.query.get('since'))
    if (since === null) throw new ApiError(400, 'invalid_request', BAD_SINCE)
    const prefix = req.query.get('prefix') ?? ''
    const ctx = this.ctx
    const account = c.account
    const info = await ctx.data.namespace(account, req.params[0]!)
    const plan = ctx.plans.get(account.rec.plan)
    if (!(await ctx.watches.take(account.id, plan.maxWatches)))
      throw new ApiError(
        'watch_limit',
        `The ${plan.id} plan allows ${plan.maxWatches} watches open at once. Close the live view in another tab, or stop a watch of your own.`,
      )
    const sink = new SseSink()
    // Signed out, or every session ended by a password change: the live view ends too.
    const signedIn = async () => (await ctx.sessions.get(c.cookie)) !== undefined
    const session = new WatchSession(ctx, account, info.storeName, prefix, sink, signedIn)
    let ok: true | Refusal
    try {
      ok = await session.prepare(since)
    } catch (err) {
      session.release()
      throw apiErrorOf(err)
    }
    if (ok !== true) throw new ApiError(ok.code, ok.message)
    // The request is counted when the stream opens; its events apart (usage.ts), as /v1 does.
    ctx.usage.record(account.id, OP.watch, 200, 0, 0, ctx.clock.now(), 1, info.name)
    return {
      status: 200,
      headers: {
        'Content-Type': 'text/event-stream; charset=utf-8',
        'Cache-Control': 'no-store',
        'X-Accel-Buffering': 'no',
      },
      stream: (out) => {
        out.onClose = () => session.stop(false)
        sink.attach(out, `retry: ${RETRY_MS}\n\n`)
        if (!out.closed) void session.run()
      },
    }
  }
}
