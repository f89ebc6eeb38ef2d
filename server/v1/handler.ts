// The /v1 request path: route -> (preflight | 405) -> API key -> rate limit and daily quota
// -> the operation. On the embedded store everything up to the operation is synchronous and
// allocation-light; on a store shared with other front ends, a key not in the cache and the
// rate limit are answered by the store, and the request is deferred (deferred.ts). The
// operation talks to storage through the Store seam.
import type { Context } from '../context.js'
import { ERRORS } from '../wire/errors.js'
import { requestId } from '../http/request-id.js'
import type { HttpRequest, HttpResponse } from '../http/uws.js'
import type { ApiKey } from '../services/accounts.js'
import { type Bucket, newBucket, takeAccountToken } from '../services/limits.js'
import { quotaRefusal } from './quota.js'
import { R } from '../metrics.js'
import { refusedFraming } from './body.js'
import { BEARER, admitBucket, identify, refuseUnknownKey } from './admission.js'
import { Call } from './call.js'
import { ALLOW_HEADERS, MAX_AGE, allowOrigin } from './cors.js'
import type { Plan } from '../services/plans.js'
import { defer } from './deferred.js'
import { prefetch } from './entries.js'
import { type Parsed, Route, parsePath } from './paths.js'
import { type Operation, ROUTES, operation } from './routes.js'

function apiKeyOf(req: HttpRequest): string {
  const k = req.getHeader('x-api-key')
  if (k !== '') return k
  const auth = req.getHeader('authorization')
  if (auth === '') return ''
  const m = BEARER.exec(auth)
  return m ? m[1]! : ''
}

export function v1Handler(ctx: Context): (res: HttpResponse, req: HttpRequest) => void {
  const parsed: Parsed = { route: Route.NotFound, ns: '', rawKey: '' }
  const bucket: Bucket = newBucket()

  const shared = !ctx.store.supports.soleWriter

  function handle(res: HttpResponse, req: HttpRequest): void {
    const asked = req.getMethod()
    // HEAD is GET without the body (Call.headOnly): the same route, checks and headers.
    const method = asked === 'head' ? 'get' : asked
    parsePath(req.getUrl(), parsed)
    const route = parsed.route
    const preflight = method === 'options'
    const origin = req.getHeader('origin')
    // The route table is read once: the operation goes down with the request.
    const op = operation(route, method)
    const call = new Call(
      ctx,
      res,
      requestId(req.getHeader('x-request-id')),
      // A preflight carries its CORS answer in headers of its own.
      preflight ? '' : origin,
      preflight ? R.preflight : (op?.metric ?? R.unmatched),
    )
    if (asked === 'head') call.headOnly = true
    if ((method === 'put' || method === 'post' || method === 'patch') && refusedFraming(call, req))
      return
    if (ctx.lifecycle.stopping)
      return call.fail('unavailable', undefined, '\r\nRetry-After: 5', true)
    if (route === Route.NotFound) return call.fail('not_found')
    if (preflight) {
      const allowOriginValue = allowOrigin(ctx.config, origin)
      const allow = ROUTES[route].allow
      let lines = `\r\nAllow: ${allow}, OPTIONS`
      if (allowOriginValue !== '') {
        lines += `\r\nAccess-Control-Allow-Origin: ${allowOriginValue}\r\nAccess-Control-Allow-Methods: ${allow}, OPTIONS\r\nAccess-Control-Allow-Headers: ${ALLOW_HEADERS}\r\nAccess-Control-Max-Age: ${MAX_AGE}`
      }
      if (ctx.config.corsOrigins !== '*') lines += '\r\nVary: Origin'
      return call.empty(204, lines)
    }
    if (op === undefined) {
      const allow = ROUTES[route].allow
      return call.fail(
        'method_not_allowed',
        `${route === Route.OpenApi ? '/v1/openapi.json' : 'This route'} takes ${allow}.`,
        `\r\nAllow: ${allow}`,
      )
    }
    if (route === Route.OpenApi)
      return call.send(200, ctx.openapi, '\r\nCache-Control: public, max-age=300')

    const secret = apiKeyOf(req)
    const now = ctx.clock.now()
    const key = secret === '' ? undefined : ctx.accounts.authenticate(secret)
    if (!(key instanceof Promise))
      return authenticated(
        call,
        req,
        parsed,
        method,
        op,
        secret,
        key,
        now,
        shared ? newBucket() : bucket,
      )
    // The store answers later: keep what the operation will need from the request.
    const frozen = defer(call, req, method, ctx)
    const p: Parsed = { route: parsed.route, ns: parsed.ns, rawKey: parsed.rawKey }
    key.then(
      (k) => authenticated(call, frozen, p, method, op, secret, k, now, newBucket()),
      (err) => call.error(err),
    )
  }

  function authenticated(
    call: Call,
    req: HttpRequest,
    parsed: Parsed,
    method: string,
    op: Operation,
    secret: string,
    key: ApiKey | undefined,
    now: number,
    out: Bucket,
  ): void {
    if (call.done) return
    const route = parsed.route
    if (key === undefined) {
      return refuseUnknownKey(
        ctx,
        call,
        req,
        now,
        secret === ''
          ? 'Send an API key in the x-api-key header (or Authorization: Bearer).'
          : ERRORS.unauthorized.message,
      )
    }
    const account = key.account
    identify(ctx, call, key, secret, now)
    call.op = op.usage
    if (route === Route.Keys || route === Route.Entry || route === Route.Namespace)
      call.ns = parsed.ns
    // The plan is read once: the operation and the data service use this one (plans.ts).
    const plan = ctx.plans.get(account.rec.plan)
    const b = takeAccountToken(ctx.store.limiter, account.id, plan, now, out)
    if (!(b instanceof Promise)) return admitted(call, req, parsed, op, plan, b, now)
    // The bucket's answer and a read are awaited together: one round trip, not two.
    if (route === Route.Entry && method === 'get') prefetch(call, parsed)
    const frozen = defer(call, req, method, ctx)
    const p: Parsed =
      frozen === req ? parsed : { route: parsed.route, ns: parsed.ns, rawKey: parsed.rawKey }
    b.then(
      (got) => admitted(call, frozen, p, op, plan, got, now),
      (err) => call.error(err),
    )
  }

  function admitted(
    call: Call,
    req: HttpRequest,
    parsed: Parsed,
    op: Operation,
    plan: Plan,
    bucket: Bucket,
    now: number,
  ): void {
    if (call.done) return
    const account = call.account!
    if (!admitBucket(call, bucket)) return
    const refused = quotaRefusal(ctx, account, plan, 1, now)
    if (refused !== null)
      return call.fail(refused.code, refused.message, `\r\nRetry-After: ${refused.retryAfter}`)

    op.run(call, req, parsed, plan)
  }

  return handle
}
