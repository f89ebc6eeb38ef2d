// /healthz (the process answers), /readyz (storage is open and requests are served) and
// /metrics (Prometheus text).
import type { Context } from './context.js'
import { statusLine } from './http/status.js'
import type { TemplatedApp } from './http/uws.js'
import { R } from './metrics.js'

export function mountOps(app: TemplatedApp, ctx: Context): void {
  app.get('/healthz', (res) => {
    res.cork(() =>
      res
        .writeStatus('200 OK')
        .writeHeader('Content-Type', 'application/json')
        .end('{"status":"ok"}'),
    )
    ctx.metrics.observe(R.ops, 200, 0)
  })
  app.get('/readyz', (res) => {
    const ready = ctx.lifecycle.ready && !ctx.lifecycle.stopping
    const status = ready ? 200 : 503
    res.cork(() =>
      res
        .writeStatus(statusLine(status))
        .writeHeader('Content-Type', 'application/json')
        .end(ready ? '{"status":"ready"}' : '{"status":"not ready"}'),
    )
    ctx.metrics.observe(R.ops, status, 0)
  })
  app.get('/metrics', (res) => {
    let aborted = false
    res.onAborted(() => {
      aborted = true
    })
    ctx.metrics.text().then(
      (text) => {
        if (aborted) return
        res.cork(() =>
          res
            .writeStatus('200 OK')
            .writeHeader('Content-Type', 'text/plain; version=0.0.4; charset=utf-8')
            .end(text),
        )
        ctx.metrics.observe(R.ops, 200, 0)
      },
      (err) => {
        ctx.log.error({ err: (err as Error).message }, 'metrics failed')
        if (!aborted) res.cork(() => res.writeStatus('500 Internal Server Error').end())
      },
    )
  })
}
