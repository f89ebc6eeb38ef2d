// /healthz (the process answers), /readyz (storage is open and requests are served) and
// /metrics (Prometheus text).
import type { Context } from '../context.js'
import { statusLine } from '../http/status.js'
import { endHead } from '../http/head.js'
import { endBody } from '../http/held-body.js'
import { ignoreAbort } from '../http/cork-room.js'
import type { HttpResponse, TemplatedApp } from '../http/uws.js'
import { R } from '../metrics.js'

export function mountOps(app: TemplatedApp, ctx: Context): void {
  /** Answers GET and HEAD (the same, without the body) of `path`. */
  const both = (path: string, fn: (res: HttpResponse, head: boolean) => void) => {
    app.get(path, (res) => {
      res.onAborted(ignoreAbort)
      fn(res, false)
    })
    app.head(path, (res) => fn(res, true))
  }
  const answer = (res: HttpResponse, head: boolean, status: number, type: string, body: string) => {
    res.cork(() => {
      res.writeStatus(statusLine(status)).writeHeader('Content-Type', type)
      if (head) endHead(res, Buffer.byteLength(body))
      else endBody(res, body)
    })
    ctx.metrics.observe(R.ops, status, 0)
  }
  both('/healthz', (res, head) => answer(res, head, 200, 'application/json', '{"status":"ok"}'))
  both('/readyz', (res, head) => {
    const { status, body } = readiness(ctx)
    answer(res, head, status, 'application/json', JSON.stringify(body))
  })
  both('/metrics', (res, head) => {
    let aborted = false
    res.onAborted(() => {
      aborted = true
    })
    ctx.metrics.text().then(
      (text) => {
        if (!aborted) answer(res, head, 200, 'text/plain; version=0.0.4; charset=utf-8', text)
      },
      (err) => {
        ctx.log.error({ err: (err as Error).message }, 'metrics failed')
        if (!aborted) res.cork(() => res.writeStatus('500 Internal Server Error').end())
      },
    )
  })
}

/**
 * Ready means writes can be taken. A full disk still serves reads, so it is reported but
 * keeps the server in rotation (taking the only node out would fail reads too); a storage
 * failure that refuses writes until it clears takes the server out, with the reason.
 */
function readiness(ctx: Context): { status: number; body: Record<string, string> } {
  if (!ctx.lifecycle.ready || ctx.lifecycle.stopping)
    return {
      status: 503,
      body: { status: 'not ready', reason: ctx.lifecycle.stopping ? 'stopping' : 'starting' },
    }
  const health = ctx.store.health()
  if (health.state === 'ok') return { status: 200, body: { status: 'ready' } }
  if (health.state === 'no_space')
    return {
      status: 200,
      body: {
        status: 'ready',
        storage: 'no_space',
        reason: 'disk full: writes are refused until space is freed',
      },
    }
  // Part of a shared store down: every front end meets the same part, so this one stays in.
  if (health.state === 'degraded')
    return { status: 200, body: { status: 'ready', storage: 'degraded', reason: health.reason } }
  return { status: 503, body: { status: 'not ready', storage: 'failed', reason: health.reason } }
}
