// The web dashboard, served by the same process: pages under `/`, their JSON under
// `/dashboard/api/*`, static files under `/assets/*`. The cookie session authorises only
// these routes, never /v1.
import type { Context } from '../context.js'
import type { TemplatedApp } from '../http/uws.js'
import { newBucket, takeAccountToken } from '../services/limits.js'
import { ApiError } from '../wire/errors.js'
import { AccountApi } from './api-account.js'
import { NotificationsApi } from './api-notifications.js'
import { queuedHashes } from '../services/password-hasher.js'
import { AuthApi } from './api-auth.js'
import { BillingApi } from './api-billing.js'
import { DataApi } from './api-data.js'
import { HistoryApi } from './api-history.js'
import { KeysApi } from './api-keys.js'
import { NamespacesApi } from './api-namespaces.js'
import { TransferApi } from './api-transfer.js'
import { WatchApi } from './api-watch.js'
import { Assets } from './assets.js'
import { type Caller, checkCsrf, checkSameOrigin, currentCaller } from './guard.js'
import {
  type BodyLimit,
  type Method,
  type Reply,
  type Req,
  errorReply,
  fail,
  route,
} from '../http/pipeline.js'
import { bodyLimit } from '../wire/body-limits.js'
import { PRIVATE_PAGES, PUBLIC_PAGES, page, shell } from './pages.js'

type ApiHandler = (req: Req, caller: Caller) => Promise<Reply>

const SMALL_BODY = 64 * 1024

export function mountDashboard(app: TemplatedApp, ctx: Context): void {
  const assets = new Assets()
  const sessions = ctx.sessions
  const auth = new AuthApi(ctx, sessions)
  ctx.metrics.boundedMaps(() => ({
    ...auth.sizes(),
    sessions: sessions.cached,
    bad_key_addresses: ctx.badKeys.size,
    bad_operator_token_addresses: ctx.badOperatorTokens.size,
    api_key_cache: ctx.accounts.cachedKeys,
    password_hashes_queued: queuedHashes(),
  }))
  const account = new AccountApi(ctx)
  const notifications = new NotificationsApi(ctx)
  const keys = new KeysApi(ctx)
  const namespaces = new NamespacesApi(ctx)
  const data = new DataApi(ctx)
  const watch = new WatchApi(ctx)
  const transfer = new TransferApi(ctx)
  const history = new HistoryApi(ctx)
  // A value's body is read only for a signed-in caller, up to what /v1 takes on the caller's
  // plan: looked up from the request's head, before any of its body is held.
  // Refused in the order the handler below refuses.
  const valueBody: BodyLimit = async (req) => {
    try {
      const caller = await currentCaller(req, ctx, sessions)
      checkSameOrigin(req)
      if (!caller) throw new ApiError(401, 'unauthorized', 'Please log in.')
      return bodyLimit(ctx.plans.get(caller.account.rec.plan))
    } catch (err) {
      return errorReply(err)
    }
  }

  // The data view reads and writes the account's data as /v1 does, so it takes from the same
  // token bucket: a script signed in to the dashboard gets no more than one with a key.
  const limited =
    (handler: ApiHandler): ApiHandler =>
    async (req, c) => {
      const plan = ctx.plans.get(c.account.rec.plan)
      const b = await takeAccountToken(
        ctx.store.limiter,
        c.account.id,
        plan,
        ctx.clock.now(),
        newBucket(),
      )
      if (!b.ok)
        throw new ApiError(
          429,
          'rate_limited',
          `The ${plan.id} plan's request rate is used up for the moment; try again in a few seconds.`,
          { 'Retry-After': String(b.retryAfter) },
        )
      return handler(req, c)
    }

  const api = (
    method: Exclude<Method, 'any'>,
    pattern: string,
    handler: ApiHandler,
    maxBody: number | BodyLimit = SMALL_BODY,
  ) => {
    route(app, ctx, method, `/dashboard/api${pattern}`, maxBody, async (req) => {
      try {
        const caller = await currentCaller(req, ctx, sessions)
        if (method !== 'get') checkSameOrigin(req)
        if (!caller) throw new ApiError(401, 'unauthorized', 'Please log in.')
        if (method !== 'get') checkCsrf(req, caller)
        return await handler(req, caller)
      } catch (err) {
        return errorReply(err)
      }
    })
  }

  const publicApi = (pattern: string, handler: (req: Req) => Promise<Reply>) => {
    route(app, ctx, 'post', `/dashboard/api${pattern}`, SMALL_BODY, async (req) => {
      try {
        checkSameOrigin(req)
        checkCsrf(req, undefined)
        return await handler(req)
      } catch (err) {
        return errorReply(err)
      }
    })
  }

  publicApi('/signup', (req) => auth.signup(req))
  publicApi('/login', (req) => auth.login(req))
  api('post', '/logout', (req, c) => auth.logout(req, c))
  api('post', '/password', (req, c) => auth.changePassword(req, c))
  api('post', '/account/delete', (req, c) => auth.deleteAccount(req, c))
  api('get', '/me', (req, c) => account.me(req, c))
  api('get', '/overview', (req, c) => account.overview(req, c))
  api('get', '/plans', (req, c) => account.plans(req, c))
  api('get', '/alerts', (req, c) => notifications.alerts(req, c))
  api('get', '/notifications', (req, c) => notifications.get(req, c))
  api('put', '/notifications', (req, c) => notifications.set(req, c))
  api('del', '/notifications', (req, c) => notifications.remove(req, c))
  api('post', '/notifications/test', (req, c) => notifications.test(req, c))
  api('post', '/plan', (req, c) => account.setPlan(req, c))
  if (ctx.billing !== undefined) {
    const billing = new BillingApi(ctx, ctx.billing)
    api('post', '/billing/checkout', (req, c) => billing.checkout(req, c))
    api('put', '/billing/spending-cap', (req, c) => billing.setSpendingCap(req, c))
    route(app, ctx, 'get', '/billing/portal', SMALL_BODY, async (req) =>
      billing.portal(req, await currentCaller(req, ctx, sessions)),
    )
  }
  api('get', '/keys', (req, c) => keys.list(req, c))
  api('post', '/keys', (req, c) => keys.create(req, c))
  api('post', '/keys/:id/rotate', (req, c) => keys.rotate(req, c))
  api('post', '/keys/:id/revoke', (req, c) => keys.revoke(req, c))
  api('get', '/namespaces', (req, c) => namespaces.list(req, c))
  api('post', '/namespaces', (req, c) => namespaces.create(req, c))
  api('del', '/namespaces/:name', (req, c) => namespaces.drop(req, c))
  api(
    'get',
    '/namespaces/:name/keys',
    limited((req, c) => data.listKeys(req, c)),
  )
  api(
    'get',
    '/namespaces/:name/value',
    limited((req, c) => data.getValue(req, c)),
  )
  api(
    'put',
    '/namespaces/:name/value',
    limited((req, c) => data.putValue(req, c)),
    valueBody,
  )
  api(
    'patch',
    '/namespaces/:name/value',
    limited((req, c) => data.patchValue(req, c)),
  )
  api(
    'del',
    '/namespaces/:name/value',
    limited((req, c) => data.deleteValue(req, c)),
  )
  api(
    'del',
    '/namespaces/:name/keys',
    limited((req, c) => data.deletePrefix(req, c)),
  )
  api('get', '/namespaces/:name/watch', (req, c) => watch.open(req, c))
  api(
    'get',
    '/namespaces/:name/export',
    limited((req, c) => transfer.exportNamespace(req, c)),
  )
  // An upload goes to its import's spool as it arrives, once its head shows a signed-in
  // caller from this site with the page's token: a forged one never reaches the disk.
  const importBody: BodyLimit = async (req) => {
    try {
      const caller = await currentCaller(req, ctx, sessions)
      checkSameOrigin(req)
      if (!caller) throw new ApiError(401, 'unauthorized', 'Please log in.')
      checkCsrf(req, caller)
      return transfer.importSink(req, caller)
    } catch (err) {
      return errorReply(err)
    }
  }
  api(
    'post',
    '/namespaces/:name/import',
    limited((req, c) => transfer.importNamespace(req, c)),
    importBody,
  )
  api(
    'get',
    '/namespaces/:name/history',
    limited((req, c) => history.versions(req, c)),
  )
  api(
    'post',
    '/namespaces/:name/restore-version',
    limited((req, c) => history.restoreVersion(req, c)),
  )
  api(
    'post',
    '/namespaces/:name/restore',
    limited((req, c) => history.restoreTo(req, c)),
  )
  route(app, ctx, 'any', '/dashboard/api/*', SMALL_BODY, () =>
    fail(404, 'not_found', 'There is no such dashboard endpoint.'),
  )

  for (const p of PUBLIC_PAGES) {
    route(app, ctx, 'get', p, SMALL_BODY, async (req) =>
      page(assets, req, await currentCaller(req, ctx, sessions), true),
    )
  }
  for (const p of PRIVATE_PAGES) {
    route(app, ctx, 'get', p, SMALL_BODY, async (req) =>
      page(assets, req, await currentCaller(req, ctx, sessions), false),
    )
  }
  route(
    app,
    ctx,
    'get',
    '/assets/*',
    SMALL_BODY,
    (req) =>
      assets.serve(req, req.path.slice('/assets/'.length)) ??
      fail(404, 'not_found', 'No such file.'),
  )
  route(app, ctx, 'get', '/favicon.ico', SMALL_BODY, (req) => assets.serve(req, 'icon.svg')!)
  // Every other path: a page that says so, in the dashboard's own look.
  route(app, ctx, 'any', '/*', SMALL_BODY, (req) =>
    req.method === 'GET' || req.method === 'HEAD'
      ? shell(assets, 'Not found', '', 404)
      : fail(404, 'not_found', 'Not found.'),
  )
}
