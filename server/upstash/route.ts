// The /upstash/{namespace} request path, as /v1's (handler.ts there): route -> (preflight |
// 405) -> API key (Bearer, as Upstash sends it) -> the key's namespaces -> rate limit and
// daily quota -> the body -> the commands (each one a request for usage, the rate limit
// and the quota) -> the answer. Everything goes through the services and the Store seam.
import type { Context } from '../context.js'
import { ignoreAbort } from '../http/cork-room.js'
import { endBody } from '../http/held-body.js'
import { requestId } from '../http/request-id.js'
import type { HttpRequest, HttpResponse } from '../http/uws.js'
import { R } from '../metrics.js'
import type { ApiKey, NamespaceInfo } from '../services/accounts.js'
import { type Bucket, newBucket, takeAccountToken } from '../services/limits.js'
import type { Plan } from '../services/plans.js'
import { OP } from '../services/usage.js'
import { readRequestBody, refusedFraming } from '../v1/body.js'
import { MAX_AGE, allowOrigin } from '../v1/cors.js'
import { defer } from '../v1/deferred.js'
import { quotaRefusal } from '../v1/quota.js'
import { BEARER, admitBucket, identify, refuseUnknownKey, showBucket } from '../v1/admission.js'
import { txBodyLimit } from '../wire/body-limits.js'
import { parseCommand, parseCommands, pathCommand } from './args.js'
import { UpstashCall } from './call.js'
import { tryFast } from './fast.js'
import { RedisError } from './errors.js'
import { ALLOW, type UpstashPath, parseUpstashPath } from './paths.js'
import { type Reply, errorText, resultText } from './reply.js'
import { type Target, mayWrite, runMulti, runOne, runPipeline } from './run.js'

/** The headers @upstash/redis sends, for a browser's preflight. */
export const UPSTASH_ALLOW_HEADERS =
  'authorization, content-type, upstash-encoding, upstash-sync-token, upstash-telemetry-runtime, upstash-telemetry-platform, upstash-telemetry-sdk, upstash-telemetry-retry, x-api-key, x-request-id'
const TOKEN = /^[0-9]{1,20}$/

function secretOf(req: HttpRequest): string {
  const auth = req.getHeader('authorization')
  if (auth !== '') {
    const m = BEARER.exec(auth)
    return m ? m[1]! : ''
  }
  const k = req.getHeader('x-api-key')
  if (k !== '') return k
  // Upstash also takes the token in the query, for clients that cannot set headers.
  const q = req.getQuery()
  if (q === undefined || q === '' || !q.includes('_token=')) return ''
  return new URLSearchParams(q).get('_token') ?? ''
}

interface Asked {
  path: UpstashPath
  method: string
  base64: boolean
  /** The sync token sent, when it is one of ours (digits). */
  token: string
}

export function upstashHandler(ctx: Context): (res: HttpResponse, req: HttpRequest) => void {
  const bucket: Bucket = newBucket()
  const shared = !ctx.store.supports.soleWriter

  function handle(res: HttpResponse, req: HttpRequest): void {
    const method = req.getMethod()
    const path = parseUpstashPath(req.getUrl())
    const preflight = method === 'options'
    const origin = req.getHeader('origin')
    const call = new UpstashCall(
      ctx,
      res,
      requestId(req.getHeader('x-request-id')),
      preflight ? '' : origin,
      preflight ? R.preflight : R.upstash,
    )
    if (method === 'post' && refusedFraming(call, req)) return
    if (ctx.lifecycle.stopping)
      return call.fail('unavailable', undefined, '\r\nRetry-After: 5', true)
    if (path === undefined)
      return call.fail(
        'not_found',
        'The Upstash routes are POST /upstash/{namespace}, /pipeline and /multi-exec, and the path form /upstash/{namespace}/{command}/...',
      )
    const allow = ALLOW[path.kind]
    if (preflight) {
      const allowed = allowOrigin(ctx.config, origin)
      let lines = `\r\nAllow: ${allow}, OPTIONS`
      if (allowed !== '')
        lines += `\r\nAccess-Control-Allow-Origin: ${allowed}\r\nAccess-Control-Allow-Methods: ${allow}, OPTIONS\r\nAccess-Control-Allow-Headers: ${UPSTASH_ALLOW_HEADERS}\r\nAccess-Control-Max-Age: ${MAX_AGE}`
      if (ctx.config.corsOrigins !== '*') lines += '\r\nVary: Origin'
      return call.empty(204, lines)
    }
    if (method !== 'post' && !(method === 'get' && path.kind === 'path'))
      return call.fail('method_not_allowed', `This route takes ${allow}.`, `\r\nAllow: ${allow}`)
    const sent = req.getHeader('upstash-sync-token')
    const asked: Asked = {
      path,
      method,
      base64: req.getHeader('upstash-encoding').toLowerCase() === 'base64',
      token: TOKEN.test(sent) ? sent : '',
    }
    const secret = secretOf(req)
    const now = ctx.clock.now()
    const key = secret === '' ? undefined : ctx.accounts.authenticate(secret)
    if (!(key instanceof Promise))
      return authenticated(call, req, asked, secret, key, now, shared ? newBucket() : bucket)
    const frozen = defer(call, req, method, ctx)
    key.then(
      (k) => authenticated(call, frozen, asked, secret, k, now, newBucket()),
      (err) => call.error(err),
    )
  }

  function authenticated(
    call: UpstashCall,
    req: HttpRequest,
    asked: Asked,
    secret: string,
    key: ApiKey | undefined,
    now: number,
    out: Bucket,
  ): void {
    if (call.done) return
    if (key === undefined) {
      return refuseUnknownKey(
        ctx,
        call,
        req,
        now,
        secret === ''
          ? 'Send a Cairn API key as Authorization: Bearer <key> (the Upstash token).'
          : 'The API key is unknown or revoked.',
      )
    }
    const account = key.account
    identify(ctx, call, key, secret, now)
    call.op = OP.upstash
    const ns = asked.path.ns
    // Its commands count to the namespace too (GET /usage's namespaces).
    call.ns = ns
    if (!key.allows(ns)) return call.fail('forbidden', `this API key may not use namespace "${ns}"`)
    const plan = ctx.plans.get(account.rec.plan)
    const b = takeAccountToken(ctx.store.limiter, account.id, plan, now, out)
    if (!(b instanceof Promise)) return admitted(call, req, asked, plan, b, now)
    const frozen = defer(call, req, asked.method, ctx)
    b.then(
      (got) => admitted(call, frozen, asked, plan, got, now),
      (err) => call.error(err),
    )
  }

  function admitted(
    call: UpstashCall,
    req: HttpRequest,
    asked: Asked,
    plan: Plan,
    b: Bucket,
    now: number,
  ): void {
    if (call.done) return
    if (!admitBucket(call, b)) return
    const quota = quotaRefusal(ctx, call.account!, plan, 1, now)
    if (quota !== null)
      return call.fail(quota.code, quota.message, `\r\nRetry-After: ${quota.retryAfter}`)
    if (asked.method === 'get')
      return commands(call, asked, plan, pathCommand(asked.path.rest, undefined))
    readRequestBody(
      call,
      req,
      txBodyLimit(plan),
      (body) => {
        let parsed: string[] | (string[] | RedisError)[]
        try {
          const kind = asked.path.kind
          parsed =
            kind === 'path'
              ? pathCommand(asked.path.rest, body)
              : kind === 'command'
                ? parseCommand(body)
                : parseCommands(body)
        } catch (err) {
          return refuse(call, err)
        }
        commands(call, asked, plan, parsed)
      },
      'transaction_too_large',
    )
  }

  /** Counts the commands against the quota and the rate bucket, then runs them. */
  function commands(
    call: UpstashCall,
    asked: Asked,
    plan: Plan,
    parsed: string[] | (string[] | RedisError)[],
  ): void {
    const kind = asked.path.kind
    const list =
      kind === 'pipeline' || kind === 'multi'
        ? (parsed as (string[] | RedisError)[])
        : [parsed as string[]]
    const n = list.length
    call.count = n
    const now = ctx.clock.now()
    // The request's own one was checked on the way in; a pipeline's commands are counted whole.
    const quota = n > 1 ? quotaRefusal(ctx, call.account!, plan, n, now) : null
    if (quota !== null) {
      call.count = 1
      return call.fail(quota.code, quota.message, `\r\nRetry-After: ${quota.retryAfter}`)
    }
    const go = () => withNamespace(call, asked, plan, list)
    // The request's own token was taken on the way in.
    const extra = Math.min(n, plan.burst ?? n) - 1
    if (extra <= 0) return go()
    const got = (b: Bucket) => {
      showBucket(call, b)
      if (!b.ok) {
        call.count = 1
        return call.fail(
          'rate_limited',
          `These ${n} commands need ${extra + 1} tokens from the rate bucket.`,
          `\r\nRetry-After: ${b.retryAfter}`,
        )
      }
      go()
    }
    const b = takeAccountToken(ctx.store.limiter, call.account!.id, plan, now, newBucket(), extra)
    if (!(b instanceof Promise)) return got(b)
    call.async()
    b.then(got, (err) => call.error(err))
  }

  function withNamespace(
    call: UpstashCall,
    asked: Asked,
    plan: Plan,
    list: (string[] | RedisError)[],
  ): void {
    const ns = asked.path.ns
    const kind = asked.path.kind
    const found = ctx.accounts.namespace(call.account!, ns)
    const go = (info: NamespaceInfo | undefined) => {
      if (call.done) return
      if (info === undefined)
        return call.fail(
          'namespace_not_found',
          `there is no namespace "${ns}" (create it first, as for /v1)`,
        )
      const one = list.length === 1 ? list[0]! : undefined
      if (
        Array.isArray(one) &&
        kind !== 'multi' &&
        tryFast(
          call,
          { pipeline: kind === 'pipeline', base64: asked.base64, token: syncHeader(asked) },
          info,
          plan,
          one,
        )
      )
        return
      const target: Target = {
        data: ctx.data,
        account: call.account!,
        info,
        plan,
        canWrite: call.key!.canWrite,
        keyCount: () => ctx.namespaces.row(info).then((r) => r.keys),
      }
      const start = () => void run(call, asked, target, list)
      if (mayWrite(list)) call.applyLater(start)
      else {
        call.async()
        start()
      }
    }
    if (!(found instanceof Promise)) return go(found)
    call.async()
    found.then(go, (err) => call.error(err))
  }

  async function run(
    call: UpstashCall,
    asked: Asked,
    t: Target,
    list: (string[] | RedisError)[],
  ): Promise<void> {
    const kind = asked.path.kind
    try {
      if (kind === 'pipeline') {
        const done = await runPipeline(t, list, (err) => internal(call, err))
        const body = `[${done.value.map((o) => (o.error !== undefined ? errorText(o.error) : resultText(o.result!, asked.base64))).join(',')}]`
        return call.send(200, body, syncHeader(asked, done.version))
      }
      if (kind === 'multi') {
        const done = await runMulti(t, list)
        const body = `[${done.value.map((r: Reply) => resultText(r, asked.base64)).join(',')}]`
        return call.send(200, body, syncHeader(asked, done.version))
      }
      const one = list[0]!
      if (one instanceof RedisError) throw one
      const done = await runOne(t, one)
      call.send(200, resultText(done.value, asked.base64), syncHeader(asked, done.version))
    } catch (err) {
      refuse(call, err, asked)
    }
  }

  function internal(call: UpstashCall, err: unknown): void {
    ctx.log.error(
      { reqId: call.id, err: (err as Error)?.message ?? String(err) },
      'upstash command failed',
    )
  }

  /** A request that fails as a whole: a command's error, or the service's. */
  function refuse(call: UpstashCall, err: unknown, asked?: Asked): void {
    if (err instanceof RedisError)
      return call.send(err.status, errorText(err.message), asked ? syncHeader(asked) : '')
    call.error(err)
  }

  // A throw below is a bug: logged, answered 500 in Upstash's form, never a stack trace.
  return (res, req) => {
    try {
      handle(res, req)
    } catch (err) {
      ctx.log.error({ err: (err as Error).message }, 'request handler failed')
      try {
        res.onAborted(ignoreAbort)
        res.cork(() => {
          res
            .writeStatus('500 Internal Server Error')
            .writeHeader('Content-Type', 'application/json')
          endBody(res, errorText('ERR internal error'))
        })
      } catch {}
    }
  }
}

/** The sync token an answer carries: the namespace's version after its writes, else as sent. */
function syncHeader(asked: Asked, version?: number): string {
  const token = version !== undefined ? String(version) : asked.token || '0'
  return `\r\nUpstash-Sync-Token: ${token}`
}
