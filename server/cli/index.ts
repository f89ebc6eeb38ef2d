#!/usr/bin/env node
// The `cairn` command line: `serve` runs the server; the account, key, plan and backup
// commands work on a running server through its operator endpoint, on a stopped one by
// opening its data directory directly, and on Redis Cluster (--store) directly.
import { nameRuns } from '../process-name.js'
import fs from 'node:fs'
import path from 'node:path'
import { type AdminArgs, COMMANDS, runAdmin } from '../operator/admin.js'
import { SERVER_FILE, TOKEN_FILE, serve } from '../app.js'
import { ConfigError, parseArgs, serveConfig } from '../config.js'
import { createLogger, errFields } from '../log.js'
import { DEFAULT_PLANS_FILE, PlanBook, PlanError } from '../services/plans.js'
import { ApiError } from '../wire/errors.js'
import { openServices } from '../services/index.js'
import { Billing, type StripeSettings } from '../services/billing/index.js'
import { type RepairReport, repairData } from '../store/embedded.js'
import { openStore } from '../store/open.js'
import { isRedisUrl, redact } from '../store/url.js'
import { type MigrateReport, PROGRESS_FILE, migrate } from './migrate.js'

const HELP = `Usage: cairn <command> [options]

  serve [--host H] [--port P] [--data DIR | --store redis://H:P[,H:P...]]
        [--durability always|interval|none]
        [--plans FILE] [--cors-origins '*'|ORIGINS] [--trust-proxy] [--log-level L]
        [--operator-token T] [--allow-private-webhooks]
        [--stripe-secret-key K --stripe-webhook-secret S
        [--stripe-api-url ORIGIN]] [--segment-bytes N, --cache-bytes N, ...:
        the engine's tuning, docs/configuration.md]  run the server
  account create --email E [--password P] [--plan ID]
                                                  make an account and its first API key
  account list                                    list accounts
  account delete --email E                        delete an account and all its data
  account password --email E --password P         set the password for the dashboard
  key create --email E [--name N] [--permission read|read-write] [--namespaces a,b]
                                                  make another API key (secret shown once)
  key list --email E                              list an account's keys
  key rotate --email E --id KEYID                 new secret, same name and scope
  key revoke --email E --id KEYID                 the key stops working at once
  plan set --email E PLAN                         move an account to another plan
  backup --to DIR                                 write a consistent copy of the data
  compact                                         reclaim the space of overwritten and deleted data now
  billing flush [--stripe-secret-key K --stripe-webhook-secret S [--stripe-api-url ORIGIN]]
                                                  send metered plans' finished hours to Stripe now
  repair                                          (server stopped) keep every intact record, drop
                                                  damaged ones, rebuild the index files; lists what it dropped
  migrate --from-data DIR --to redis://H:P[,...]  (server stopped) copy an embedded database into Redis
                                                  Cluster, resumably, and compare the key counts

Every command takes --data DIR (default ./data) and --json. With the server running, the
commands go through its operator endpoint (token in <data>/${TOKEN_FILE}, or
--operator-token / CAIRN_OPERATOR_TOKEN); with it stopped, they open the data directory.
With --store redis://... (or CAIRN_STORE) the account, key and plan commands work on
Redis Cluster directly, whether or not front ends run on it (docs/scale-out.md).
`

class UsageError extends Error {}

const ARGS: Record<string, string[]> = {
  email: ['--email'],
  password: ['--password'],
  plan: ['--plan'],
  name: ['--name'],
  permission: ['--permission'],
  namespaces: ['--namespaces'],
  id: ['--id'],
  to: ['--to'],
}

function adminCommand(
  words: string[],
  flags: Map<string, string>,
): { command: string; args: AdminArgs } {
  const [group, verb, extra] = words
  const command = verb && group !== 'backup' ? `${group}.${verb}` : String(group)
  if (!(COMMANDS as readonly string[]).includes(command))
    throw new UsageError(`there is no command "${words.slice(0, 2).join(' ')}"`)
  const args: AdminArgs = {}
  for (const [name, names] of Object.entries(ARGS)) {
    for (const f of names) if (flags.has(f)) args[name] = flags.get(f)
  }
  if (command === 'plan.set' && extra !== undefined) args.plan = extra
  if (command === 'backup' && typeof args.to === 'string') args.to = path.resolve(args.to)
  const need = (k: string, flag: string) => {
    if (args[k] === undefined) throw new UsageError(`${words.slice(0, 2).join(' ')} needs ${flag}`)
  }
  if (
    command.startsWith('key.') ||
    ['account.create', 'account.delete', 'account.password', 'plan.set'].includes(command)
  )
    need('email', '--email E')
  if (command === 'account.password') need('password', '--password P')
  if (command === 'key.rotate' || command === 'key.revoke') need('id', '--id KEYID')
  if (command === 'plan.set') need('plan', 'a plan id')
  if (command === 'backup') need('to', '--to DIR')
  return { command, args }
}

/** Sends the command to the server that holds the data directory. */
async function viaServer(
  dataDir: string,
  command: string,
  args: AdminArgs,
  token: string | undefined,
): Promise<unknown> {
  let info: { host: string; port: number }
  try {
    info = JSON.parse(fs.readFileSync(path.join(dataDir, SERVER_FILE), 'utf8'))
  } catch {
    throw new ApiError(
      503,
      'server_unknown',
      `${dataDir} is in use, but ${SERVER_FILE} does not say by which server.`,
    )
  }
  const secret = token ?? fs.readFileSync(path.join(dataDir, TOKEN_FILE), 'utf8').trim()
  const host = ['0.0.0.0', '::', ''].includes(info.host) ? '127.0.0.1' : info.host
  const res = await fetch(
    `http://${host.includes(':') ? `[${host}]` : host}:${info.port}/_operator/${command}`,
    {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-operator-token': secret },
      body: JSON.stringify(args),
    },
  )
  const body = (await res.json()) as any
  if (!res.ok)
    throw new ApiError(
      res.status,
      body?.error?.code ?? 'error',
      body?.error?.message ?? res.statusText,
    )
  return body
}

/** Runs the command on storage itself: a stopped server's data directory, or Redis. */
async function directly(
  where: { dataDir: string; store?: string },
  plansFile: string,
  command: string,
  args: AdminArgs,
  stripe?: StripeSettings,
): Promise<unknown> {
  const svc = await openServices({ ...where, durability: 'always' }, PlanBook.load(plansFile))
  try {
    const billing =
      stripe === undefined || command !== 'billing.flush'
        ? undefined
        : new Billing(
            stripe,
            svc,
            createLogger('error'),
            Number(process.env.CAIRN_TEST_METER_SKEW_MS) || 0,
          )
    return await runAdmin({ ...svc, billing }, command, args)
  } finally {
    await svc.store.close()
  }
}

/**
 * Whether server.json names a running server. By its process's full name where it has one:
 * after a kill -9 and a reboot, the pid alone may be another program's.
 */
function serverRunning(dataDir: string): boolean {
  let info: { pid?: unknown; owner?: unknown }
  try {
    info = JSON.parse(fs.readFileSync(path.join(dataDir, SERVER_FILE), 'utf8'))
  } catch {
    return false
  }
  const name = typeof info.owner === 'string' ? info.owner : String(info.pid)
  return nameRuns(name)
}

function show(command: string, out: any): string {
  const key = (k: any) =>
    `${k.id}  ${k.name}  ${k.prefix}…  ${k.permission}${k.namespaces ? `  namespaces: ${k.namespaces.join(',')}` : ''}  created ${k.createdAt}${k.lastUsedAt ? `  last used ${k.lastUsedAt}` : ''}`
  switch (command) {
    case 'account.create':
      return `Account ${out.account.id} (${out.account.email}, plan ${out.account.plan})\nAPI key ${out.apiKey.key.id}; the secret is shown once, copy it now:\n${out.apiKey.secret}`
    case 'account.list':
      return (
        out.accounts
          .map(
            (a: any) =>
              `${a.id}  ${a.email}  ${a.plan}  ${a.namespaces} namespaces  ${a.keys} keys  created ${a.createdAt}`,
          )
          .join('\n') || 'No accounts.'
      )
    case 'account.password':
      return `${out.account.email} can now log in to the dashboard with that password.`
    case 'account.delete':
      return `Deleted account ${out.deleted.id} (${out.deleted.email}) and all its data.`
    case 'key.create':
    case 'key.rotate':
      return `${key(out.key)}\nThe secret is shown once, copy it now:\n${out.secret}`
    case 'key.list':
      return out.keys.map(key).join('\n') || 'No keys.'
    case 'key.revoke':
      return `Revoked ${out.revoked.id} (${out.revoked.name}).`
    case 'plan.set':
      return `${out.account.email} is now on plan ${out.account.plan}.`
    case 'billing.flush':
      return (
        out.sent
          .map((h: any) => `${h.account}  ${h.hour}  ${h.requests} requests past the quota`)
          .join('\n') || 'Nothing to send: every finished hour was sent already.'
      )
    case 'compact':
      return `Compacted: ${out.diskBytesBefore} bytes on disk before, ${out.diskBytesAfter} after (${out.liveBytes} live).`
    default:
      return JSON.stringify(out, null, 2)
  }
}

/** `cairn repair`: offline, because it rewrites the files a running server holds open. */
async function repairCommand(dataDir: string, json: boolean): Promise<number> {
  if (!fs.existsSync(dataDir)) throw new UsageError(`${dataDir} does not exist`)
  let report: RepairReport
  try {
    report = await repairData(dataDir)
  } catch (err) {
    if ((err as { code?: string }).code !== 'LOCKED') throw err
    throw new ApiError(
      409,
      'locked',
      `${dataDir} is in use by a running server; stop it, then run cairn repair again.`,
    )
  }
  if (json) {
    process.stdout.write(`${JSON.stringify(report)}\n`)
    return 0
  }
  const lines = report.dropped.map(
    (d) =>
      `  ${d.file} at offset ${d.offset}: ${d.reason}${d.namespace === undefined ? '' : ` (namespace ${d.namespace}${d.key === undefined ? '' : `, key ${JSON.stringify(d.key)}`})`}`,
  )
  process.stdout.write(
    `Repaired ${dataDir}: kept ${report.kept} records, dropped ${report.dropped.length}.\n${lines.join('\n')}${lines.length ? '\n' : ''}`,
  )
  return 0
}

/** `cairn migrate`: an embedded database into Redis Cluster (the server stopped). */
async function migrateCommand(flags: Map<string, string>): Promise<number> {
  const from = flags.get('--from-data')
  const to = flags.get('--to')
  if (!from || !to || !isRedisUrl(to))
    throw new UsageError('migrate needs --from-data DIR and --to redis://host:port[,host:port...]')
  const dir = path.resolve(from)
  if (!fs.existsSync(dir)) throw new UsageError(`${dir} does not exist`)
  const json = flags.has('--json')
  const store = await openStore({ dataDir: dir, store: to, durability: 'always' })
  let report: MigrateReport
  try {
    report = await migrate(
      dir,
      store,
      redact(to),
      json ? undefined : (l) => process.stdout.write(`${l}\n`),
    )
  } catch (err) {
    if ((err as { code?: string }).code !== 'LOCKED') throw err
    throw new ApiError(
      409,
      'locked',
      `${dir} is in use by a running server; stop it, then migrate.`,
    )
  } finally {
    await store.close()
  }
  const ok = report.mismatched.length === 0
  if (json) process.stdout.write(`${JSON.stringify(report)}\n`)
  else if (report.alreadyMigrated)
    process.stdout.write(
      `Already migrated to ${redact(to)}: nothing copied, so nothing written there since is overwritten. Copying again (after deleting ${path.join(dir, PROGRESS_FILE)}) would bring back keys deleted there since; do it only into a cluster nothing has used.\n`,
    )
  else
    process.stdout.write(
      `${ok ? 'Migrated' : 'Copied, but the counts disagree'}: ${report.accounts} accounts, ${report.keys} keys, ${report.namespaces} namespaces, ${report.entries} entries, ${report.sessions} sessions, ${report.usageDays} days of usage${report.resumed ? ' (resumed)' : ''}.\n${report.mismatched.map((m) => `  ${m.namespace}: ${m.source} keys here, ${m.target} there\n`).join('')}`,
    )
  return ok ? 0 : 1
}

/** Stripe's settings for `billing flush` run here, from the flags or the environment. */
function stripeSettings(flags: Map<string, string>): StripeSettings | undefined {
  const env = process.env
  return Billing.settings(
    {
      stripeSecretKey: flags.get('--stripe-secret-key') ?? env.CAIRN_STRIPE_SECRET_KEY,
      stripeWebhookSecret: flags.get('--stripe-webhook-secret') ?? env.CAIRN_STRIPE_WEBHOOK_SECRET,
      stripeApiUrl: (flags.get('--stripe-api-url') ?? env.CAIRN_STRIPE_API_URL)?.replace(/\/$/, ''),
    },
    createLogger('error'),
  )
}

async function main(argv: string[]): Promise<number> {
  const { flags, words } = parseArgs(argv, [
    '--trust-proxy',
    '--allow-private-webhooks',
    '--json',
    '--help',
  ])
  if (words.length === 0 || flags.has('--help') || words[0] === 'help') {
    process.stdout.write(HELP)
    return words.length === 0 && !flags.has('--help') ? 2 : 0
  }
  if (words[0] === 'serve') {
    const config = serveConfig(flags, process.env)
    const log = createLogger(config.logLevel)
    const running = await serve(config, log)
    const shutdown = (signal: string) => {
      log.info({ signal }, 'stopping')
      running.stop().then(
        () => process.exit(0),
        (err) => {
          log.error(errFields(err, false), 'stopping failed')
          process.exit(1)
        },
      )
    }
    process.on('SIGTERM', () => shutdown('SIGTERM'))
    process.on('SIGINT', () => shutdown('SIGINT'))
    process.on('SIGHUP', () => {
      try {
        running.ctx.plans.reload()
        log.info({ plans: config.plansFile }, 'plans reloaded')
        running.ctx.history.applyAll().then(
          (n) => {
            if (n > 0) log.warn({ namespaces: n }, 'history windows not all set')
          },
          (err) => log.error(errFields(err, false), 'history windows not all set'),
        )
      } catch (err) {
        log.error(errFields(err, false), 'plans not reloaded; the old ones stay in force')
      }
    })
    return -1
  }
  const dataDir = path.resolve(flags.get('--data') ?? process.env.CAIRN_DATA ?? './data')
  if (words[0] === 'repair') {
    if (flags.has('--store') || process.env.CAIRN_STORE)
      throw new UsageError(
        'repair is for the embedded engine; Redis keeps its own AOF and replicas',
      )
    return repairCommand(dataDir, flags.has('--json'))
  }
  if (words[0] === 'migrate') return migrateCommand(flags)
  const { command, args } = adminCommand(words, flags)
  const plansFile = path.resolve(
    flags.get('--plans') ?? process.env.CAIRN_PLANS ?? DEFAULT_PLANS_FILE,
  )
  const token = flags.get('--operator-token') ?? process.env.CAIRN_OPERATOR_TOKEN
  const store = flags.get('--store') ?? (process.env.CAIRN_STORE || undefined)
  if (store !== undefined && !isRedisUrl(store))
    throw new UsageError('--store takes a redis:// or rediss:// URL')
  // Redis is shared by design: commands work on it directly, servers running or not. A data
  // directory belongs to the one server holding it, which is asked through its operator
  // endpoint; a stopped server's directory is opened here.
  const out =
    store === undefined && serverRunning(dataDir)
      ? await viaServer(dataDir, command, args, token)
      : await directly({ dataDir, store }, plansFile, command, args, stripeSettings(flags)).catch(
          (err) => {
            if ((err as { code?: string }).code !== 'LOCKED') throw err
            throw new ApiError(
              409,
              'locked',
              `${dataDir} is held by a server this command cannot reach (no live server in ${SERVER_FILE}); is it running as another user?`,
            )
          },
        )
  process.stdout.write(flags.has('--json') ? `${JSON.stringify(out)}\n` : `${show(command, out)}\n`)
  return 0
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code
  },
  (err) => {
    const known =
      err instanceof ApiError ||
      err instanceof ConfigError ||
      err instanceof PlanError ||
      err instanceof UsageError
    process.stderr.write(
      `cairn: ${known ? err.message : ((err as Error).message ?? String(err))}\n`,
    )
    if (err instanceof UsageError) process.stderr.write('Run `cairn help` for the commands.\n')
    // A flag without its value, or a setting out of range, is how the command was given.
    process.exitCode = err instanceof UsageError || err instanceof ConfigError ? 2 : 1
  },
)
