// The operator endpoint: POST /_operator/<command> with the operator token, so the command
// line can manage accounts and keys while the server holds the data directory. Requests
// that came through a proxy (X-Forwarded-For) are refused: the command line talks to the
// server directly on the same machine.
import type { AdminServices } from './admin.js'
import { runAdmin } from './admin.js'
import type { Context } from './context.js'
import { clientAddress } from './http/address.js'
import { statusLine } from './http/status.js'
import type { HttpRequest, HttpResponse, TemplatedApp } from './http/uws.js'
import { R } from './metrics.js'
import { sameSecret } from './secrets.js'
import { ServiceError } from './service-error.js'
import { storageFault } from './storage-faults.js'
import { ApiError } from './errors.js'
import { parseJsonObject } from './wire/json-body.js'

const BODY_LIMIT = 64 * 1024

export function mountOperator(
  app: TemplatedApp,
  ctx: Context,
  token: string,
  svc: AdminServices,
): void {
  app.any('/_operator/*', (res: HttpResponse, req: HttpRequest) => {
    const started = performance.now()
    let aborted = false
    const reply = (status: number, body: unknown, retryAfter = 0) => {
      if (aborted) return
      res.cork(() => {
        res
          .writeStatus(statusLine(status))
          .writeHeader('Content-Type', 'application/json')
          .writeHeader('Cache-Control', 'no-store')
        if (retryAfter > 0) res.writeHeader('Retry-After', String(retryAfter))
        res.end(JSON.stringify(body))
      })
      ctx.metrics.observe(R.operator, status, (performance.now() - started) / 1000)
    }
    const fail = (status: number, code: string, message: string) =>
      reply(status, { error: { code, message } })
    const sent = req.getHeader('x-operator-token')
    const proxied = req.getHeader('x-forwarded-for') !== ''
    const command = req.getUrl().slice('/_operator/'.length)
    if (req.getMethod() !== 'post')
      return fail(405, 'method_not_allowed', 'Operator commands are POSTed.')
    if (proxied || sent === '' || !sameSecret(sent, token)) {
      const b = ctx.badOperatorTokens.take(clientAddress(res, '', false), Date.now())
      if (!b.ok) {
        const error = {
          code: 'rate_limited',
          message: 'Too many wrong operator tokens from this address.',
        }
        return reply(429, { error }, b.retryAfter)
      }
      return fail(
        401,
        'unauthorized',
        'The operator endpoint needs the operator token, sent directly (not through a proxy).',
      )
    }
    res.onAborted(() => {
      aborted = true
    })
    const chunks: Buffer[] = []
    let size = 0
    res.onData((chunk, isLast) => {
      size += chunk.byteLength
      if (size > BODY_LIMIT) {
        if (size - chunk.byteLength <= BODY_LIMIT)
          fail(413, 'value_too_large', 'The request body is too large.')
        return
      }
      chunks.push(Buffer.copyBytesFrom(new Uint8Array(chunk)))
      if (!isLast) return
      let args: Record<string, unknown>
      try {
        args = chunks.length === 0 || size === 0 ? {} : parseJsonObject(Buffer.concat(chunks))
      } catch (err) {
        return fail(400, 'invalid_json', (err as Error).message)
      }
      runAdmin(svc, command, args).then(
        (out) => {
          ctx.log.info({ command }, 'operator command')
          reply(200, out)
        },
        (err) => {
          const known = err instanceof ServiceError || err instanceof ApiError
          const shown = known ? err : storageFault(err)
          if (shown) return fail(shown.status, shown.code, shown.message)
          ctx.log.error({ command, err: (err as Error).message }, 'operator command failed')
          fail(500, 'internal_error', 'The command failed; see the server log.')
        },
      )
    })
  })
}
