// The operator endpoint: POST /_operator/<command> with the operator token, so the command
// line can manage accounts and keys while the server holds the data directory. Requests
// that came through a proxy (X-Forwarded-For) are refused: the command line talks to the
// server directly on the same machine. Bodies, errors, the shutdown drain and metrics are
// the shared pipeline's (http/pipeline.ts).
import type { AdminServices } from './admin.js'
import { runAdmin } from './admin.js'
import type { Context } from '../context.js'
import { type Reply, type Req, errorReply, fail, jsonReply, route } from '../http/pipeline.js'
import type { TemplatedApp } from '../http/uws.js'
import { R } from '../metrics.js'
import { sameSecret } from '../services/secrets.js'
import { parseJsonObject } from '../wire/json-body.js'

const BODY_LIMIT = 64 * 1024

export function mountOperator(
  app: TemplatedApp,
  ctx: Context,
  token: string,
  svc: AdminServices,
): void {
  const answer = async (req: Req): Promise<Reply> => {
    if (req.method !== 'POST')
      return fail(405, 'method_not_allowed', 'Operator commands are POSTed.')
    const sent = req.headers['x-operator-token']!
    if (req.headers['x-forwarded-for'] !== '' || sent === '' || !sameSecret(sent, token)) {
      const b = ctx.badOperatorTokens.take(req.ip, ctx.clock.now())
      if (!b.ok) {
        return fail(429, 'rate_limited', 'Too many wrong operator tokens from this address.', {
          headers: { 'Retry-After': String(b.retryAfter) },
        })
      }
      return fail(
        401,
        'unauthorized',
        'The operator endpoint needs the operator token, sent directly (not through a proxy).',
      )
    }
    const command = req.path.slice('/_operator/'.length)
    try {
      const args = req.body.length === 0 ? {} : parseJsonObject(req.body)
      const out = await runAdmin(svc, command, args)
      ctx.log.info({ command }, 'operator command')
      return jsonReply(200, out)
    } catch (err) {
      // The contract's errors as they are; anything else is logged and answered 500.
      return errorReply(err)
    }
  }
  route(app, ctx, 'any', '/_operator/*', BODY_LIMIT, answer, R.operator)
}
