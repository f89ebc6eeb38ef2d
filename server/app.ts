// `cairn serve`: opens storage, builds the services, mounts /v1, the operator endpoint,
// the health and metrics routes and the dashboard on one uWebSockets.js app, and stops
// cleanly on SIGTERM or SIGINT.
import { TestClock, wallClock } from './services/clock.js'
import { ownName } from './process-name.js'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Config } from './config.js'
import type { Context } from './context.js'
import { mountDashboard } from './dashboard/index.js'
import { errorText } from './wire/errors.js'
import { uws, type us_listen_socket } from './http/uws.js'
import { ignoreAbort } from './http/cork-room.js'
import { endBody } from './http/held-body.js'
import { AddressLimiter } from './services/limits.js'
import { type Logger, Repeats, createLogger } from './log.js'
import { Metrics } from './metrics.js'
import { mountOperator } from './operator/operator.js'
import { mountOps } from './operator/ops.js'
import { mountStripeWebhook } from './billing/webhook.js'
import { Billing } from './services/billing/index.js'
import { PlanBook } from './services/plans.js'
import { randomToken } from './services/secrets.js'
import { openServices } from './services/index.js'
import { watchSockets } from './v1/watch-ws.js'
import { Watches } from './services/watches.js'
import { v1Handler } from './v1/handler.js'
import { upstashHandler } from './upstash/route.js'

const here = path.dirname(fileURLToPath(import.meta.url))
const OPENAPI_FILE = [
  path.join(here, 'openapi.json'),
  path.join(here, '../../server/openapi.json'),
].find((p) => fs.existsSync(p))!
export const SERVER_FILE = 'server.json'
export const TOKEN_FILE = 'operator.token'
const DRAIN_MS = 10_000

export interface Running {
  port: number
  ctx: Context
  stop(): Promise<void>
}

function writePrivate(file: string, text: string): void {
  const tmp = `${file}.tmp`
  fs.writeFileSync(tmp, text, { mode: 0o600 })
  fs.renameSync(tmp, file)
}

export async function serve(
  config: Config,
  log: Logger = createLogger(config.logLevel),
): Promise<Running> {
  const plans = PlanBook.load(config.plansFile)
  // Also on Redis: the operator token and server.json live here for the command line.
  fs.mkdirSync(config.dataDir, { recursive: true })
  const clock = config.testClock ? new TestClock() : wallClock
  if (clock instanceof TestClock)
    log.warn(
      { at: new Date(clock.now()).toISOString() },
      'test clock: time moves only through the operator (CAIRN_TEST_CLOCK)',
    )
  const svc = await openServices({ ...config, clock }, plans, {
    allowPrivate: config.allowPrivateWebhooks,
    retryMs: config.webhookRetryMs,
  })
  const token = config.operatorToken ?? randomToken()
  const ctx: Context = {
    ...svc,
    config,
    badKeys: new AddressLimiter(),
    badOperatorTokens: new AddressLimiter(5, 0.2),
    metrics: new Metrics(svc.store),
    log,
    debug: config.logLevel === 'debug',
    openapi: fs.readFileSync(OPENAPI_FILE),
    lifecycle: { ready: false, stopping: false, inflight: 0 },
    watches: new Watches(svc.store.holds),
    billing: undefined,
  }
  const stripe = Billing.settings(config, log)
  if (stripe !== undefined) ctx.billing = new Billing(stripe, svc, log, config.meterSkewMs)
  svc.namespaces.onDropped((ns) => ctx.watches.endNamespace(ns))
  ctx.metrics.openWatches(() => ctx.watches.open)

  const app = uws.App()
  const v1 = v1Handler(ctx)
  const guarded = (res: Parameters<typeof v1>[0], req: Parameters<typeof v1>[1]) => {
    try {
      v1(res, req)
    } catch (err) {
      log.error({ err: (err as Error).message }, 'request handler failed')
      try {
        res.onAborted(ignoreAbort)
        res.cork(() => {
          res
            .writeStatus('500 Internal Server Error')
            .writeHeader('Content-Type', 'application/json')
          endBody(res, errorText('internal_error'))
        })
      } catch {}
    }
  }
  app.any('/v1', guarded)
  app.any('/v1/*', guarded)
  app.any('/upstash/*', upstashHandler(ctx))
  app.ws('/v1/*', watchSockets(ctx) as never)
  mountOps(app, ctx)
  mountOperator(app, ctx, token, {
    ...ctx,
    testClock: clock instanceof TestClock ? clock : undefined,
  })
  if (ctx.billing !== undefined) mountStripeWebhook(app, ctx, ctx.billing)
  mountDashboard(app, ctx)

  const listenSocket = await new Promise<us_listen_socket>((resolve, reject) => {
    app.listen(config.host, config.port, (s) =>
      s ? resolve(s) : reject(new Error(`cannot listen on ${config.host}:${config.port}`)),
    )
  }).catch(async (err) => {
    await svc.store.close()
    throw err
  })
  const port = uws.us_socket_local_port(listenSocket)

  if (config.operatorToken === undefined)
    writePrivate(path.join(config.dataDir, TOKEN_FILE), `${token}\n`)
  writePrivate(
    path.join(config.dataDir, SERVER_FILE),
    JSON.stringify({
      pid: process.pid,
      owner: ownName(),
      host: config.host,
      port,
      startedAt: new Date().toISOString(),
    }),
  )

  const flush = async () => {
    await ctx.usage.flush()
    await ctx.accounts.flushLastUsed()
  }
  let flushing = false
  // Every pass fails while storage does: once a minute in the log is enough.
  const flushFailures = new Repeats(60_000)
  const timer = setInterval(() => {
    if (flushing) return
    flushing = true
    flush()
      .catch((err) =>
        flushFailures.warn(
          log,
          (err as Error).message,
          { err: (err as Error).message },
          'writing usage failed',
        ),
      )
      .finally(() => {
        flushing = false
      })
    ctx.badKeys.prune()
    ctx.badOperatorTokens.prune()
  }, config.usageFlushMs)
  timer.unref()

  ctx.billing?.downgrades.start(config.billingScanMs)
  ctx.billing?.meter.start(config.billingScanMs)
  svc.webhooks.start(log)
  ctx.lifecycle.ready = true
  for (const note of svc.store.startNotes ?? []) log.warn({ store: svc.store.kind }, note)
  // Logged when done: on a shared store the start does not wait for all of them.
  void svc.history.started.then((n) => {
    if (n > 0)
      log.warn(
        { namespaces: n },
        'history windows not set at start: those namespaces keep the ones they had',
      )
  })
  log.info(
    {
      port,
      host: config.host,
      dataDir: config.dataDir,
      // The store's kind only: a redis:// URL may hold a password.
      store: svc.store.kind,
      durability: config.durability,
      plans: config.plansFile,
      stripe: ctx.billing !== undefined,
    },
    'listening',
  )

  let stopped: Promise<void> | null = null
  const stop = () => {
    stopped ??= (async () => {
      ctx.lifecycle.stopping = true
      uws.us_listen_socket_close(listenSocket)
      ctx.watches.endAll()
      const deadline = Date.now() + DRAIN_MS
      while (ctx.lifecycle.inflight > 0 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 10))
      clearInterval(timer)
      await ctx.billing?.downgrades.stop()
      await ctx.billing?.meter.stop()
      ctx.webhooks.stop()
      while (flushing) await new Promise((r) => setTimeout(r, 10))
      await flush().catch((err) =>
        log.error({ err: (err as Error).message }, 'writing usage failed'),
      )
      await ctx.store.close()
      try {
        fs.rmSync(path.join(config.dataDir, SERVER_FILE), { force: true })
      } catch (err) {
        // A read-only data directory must not turn a clean stop into a failed one: the file
        // only helps the command line find this server, and names a pid that is now gone.
        log.warn({ err: (err as Error).message }, 'could not remove server.json')
      }
      ;(app as unknown as { close(): void }).close()
      log.info({ inflight: ctx.lifecycle.inflight }, 'stopped')
    })()
    return stopped
  }
  return { port, ctx, stop }
}
