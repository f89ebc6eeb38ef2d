// `cairn serve` settings: flags win over environment variables, which win over defaults.
import path from 'node:path'
import type { Durability, EngineTuning } from './store/types.js'
import type { LogLevel } from './log.js'
import { DEFAULT_PLANS_FILE } from './services/plans.js'

export interface Config {
  host: string
  port: number
  dataDir: string
  /** A `redis://` URL: keep everything in Redis Cluster instead of the data directory. */
  store: string | undefined
  durability: Durability
  plansFile: string
  /** '*' or the exact origins allowed to call /v1 from a browser. */
  corsOrigins: '*' | string[]
  trustProxy: boolean
  logLevel: LogLevel
  /** When undefined, a random one is made and written to <data>/operator.token. */
  operatorToken: string | undefined
  /** How often usage counters and key last-used times are written to storage. */
  usageFlushMs: number
  /** Paid plans through Stripe: on only when both the secret key and the webhook secret are given. */
  stripeSecretKey: string | undefined
  stripeWebhookSecret: string | undefined
  /** Another origin for Stripe's API (a test double, a proxy); Stripe's own when undefined. */
  stripeApiUrl: string | undefined
  /** How often due downgrades are looked for (docs/billing.md: within a minute). */
  billingScanMs: number
  /** Tests only (CAIRN_TEST_METER_SKEW_MS): how far ahead the meter's clock runs. */
  meterSkewMs: number
  /**
   * Tests only (CAIRN_TEST_CLOCK=1): the server's clock stands still and moves only through
   * the operator's clock.advance (services/clock.ts). Refused unless the server listens on a
   * loopback address, and where NODE_ENV is production.
   */
  testClock: boolean
  /** The embedded engine's tuning; only what was set (the engine's defaults otherwise). */
  engine: EngineTuning
  /** Notification webhooks may reach loopback, private and link-local addresses. */
  allowPrivateWebhooks: boolean
  /** A webhook's first retry delay; the back-off scales with it (CAIRN_WEBHOOK_RETRY_MS). */
  webhookRetryMs: number
}

export class ConfigError extends Error {}

interface Option {
  flag: string
  env: string
  /** Takes no value: present means on. */
  boolean?: boolean
}

const OPTIONS: Record<
  keyof Omit<
    Config,
    'usageFlushMs' | 'billingScanMs' | 'meterSkewMs' | 'testClock' | 'engine' | 'webhookRetryMs'
  >,
  Option
> = {
  host: { flag: '--host', env: 'CAIRN_HOST' },
  port: { flag: '--port', env: 'CAIRN_PORT' },
  dataDir: { flag: '--data', env: 'CAIRN_DATA' },
  store: { flag: '--store', env: 'CAIRN_STORE' },
  durability: { flag: '--durability', env: 'CAIRN_DURABILITY' },
  plansFile: { flag: '--plans', env: 'CAIRN_PLANS' },
  corsOrigins: { flag: '--cors-origins', env: 'CAIRN_CORS_ORIGINS' },
  trustProxy: { flag: '--trust-proxy', env: 'CAIRN_TRUST_PROXY', boolean: true },
  logLevel: { flag: '--log-level', env: 'CAIRN_LOG_LEVEL' },
  operatorToken: { flag: '--operator-token', env: 'CAIRN_OPERATOR_TOKEN' },
  stripeSecretKey: { flag: '--stripe-secret-key', env: 'CAIRN_STRIPE_SECRET_KEY' },
  stripeWebhookSecret: { flag: '--stripe-webhook-secret', env: 'CAIRN_STRIPE_WEBHOOK_SECRET' },
  stripeApiUrl: { flag: '--stripe-api-url', env: 'CAIRN_STRIPE_API_URL' },
  allowPrivateWebhooks: {
    flag: '--allow-private-webhooks',
    env: 'CAIRN_ALLOW_PRIVATE_WEBHOOKS',
    boolean: true,
  },
}

/** The engine's options as `serve` flags: whole numbers of at least `min`, a ratio, or on/off. */
const ENGINE_OPTIONS: Record<
  keyof EngineTuning,
  Option & { kind: 'bytes' | 'ms' | 'ratio' | 'switch' }
> = {
  syncIntervalMs: { flag: '--sync-interval-ms', env: 'CAIRN_SYNC_INTERVAL_MS', kind: 'ms' },
  segmentBytes: { flag: '--segment-bytes', env: 'CAIRN_SEGMENT_BYTES', kind: 'bytes' },
  cacheBytes: { flag: '--cache-bytes', env: 'CAIRN_CACHE_BYTES', kind: 'bytes' },
  compactionDeadRatio: {
    flag: '--compaction-dead-ratio',
    env: 'CAIRN_COMPACTION_DEAD_RATIO',
    kind: 'ratio',
  },
  compactionMinDeadBytes: {
    flag: '--compaction-min-dead-bytes',
    env: 'CAIRN_COMPACTION_MIN_DEAD_BYTES',
    kind: 'bytes',
  },
  checkpointBytes: { flag: '--checkpoint-bytes', env: 'CAIRN_CHECKPOINT_BYTES', kind: 'bytes' },
  autoCompact: { flag: '--auto-compact', env: 'CAIRN_AUTO_COMPACT', kind: 'switch' },
}

/** The engine options given, checked: a bad one is refused at start, not met at the first write. */
function engineTuning(pick: (o: Option) => string | undefined): EngineTuning {
  const out: Record<string, number | boolean> = {}
  for (const [name, o] of Object.entries(ENGINE_OPTIONS)) {
    const raw = pick(o)
    if (raw === undefined) continue
    if (o.kind === 'switch') {
      if (!/^(on|off|true|false|1|0)$/i.test(raw))
        throw new ConfigError(`${o.flag} takes on or off`)
      out[name] = /^(on|true|1)$/i.test(raw)
      continue
    }
    const n = Number(raw)
    if (o.kind === 'ratio') {
      if (!(n > 0 && n < 1)) throw new ConfigError(`${o.flag} must be between 0 and 1`)
    } else if (!Number.isSafeInteger(n) || n < 0 || (o.kind === 'ms' && n === 0)) {
      throw new ConfigError(`${o.flag} must be a whole number${o.kind === 'ms' ? ' above 0' : ''}`)
    } else if (name === 'segmentBytes' && n < 4096) {
      throw new ConfigError(`${o.flag} must be at least 4096`)
    }
    out[name] = n
  }
  return out as EngineTuning
}

/** Splits argv into `--flag value` pairs and bare words; `--flag=value` works too. */
export function parseArgs(
  argv: string[],
  booleans: string[] = [],
): { flags: Map<string, string>; words: string[] } {
  const flags = new Map<string, string>()
  const words: string[] = []
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    if (!a.startsWith('--')) {
      words.push(a)
      continue
    }
    const eq = a.indexOf('=')
    if (eq > 0) flags.set(a.slice(0, eq), a.slice(eq + 1))
    else if (booleans.includes(a)) flags.set(a, 'true')
    else {
      const v = argv[i + 1]
      if (v === undefined || v.startsWith('--')) throw new ConfigError(`${a} needs a value`)
      flags.set(a, v)
      i++
    }
  }
  return { flags, words }
}

const truthy = (v: string) => /^(1|true|yes|on)$/i.test(v)

/**
 * CAIRN_TEST_CLOCK=1: a clock that time passes on only when a test says so. A server that
 * others reach must never run on it (no key would expire, no throttle would ease), so it is
 * taken only exactly as "1", only on a loopback address, and never where NODE_ENV is
 * production; anything else set is refused rather than ignored.
 */
function testClockWanted(env: NodeJS.ProcessEnv, host: string): boolean {
  const v = env.CAIRN_TEST_CLOCK
  if (v === undefined || v === '') return false
  if (v !== '1') throw new ConfigError('CAIRN_TEST_CLOCK is 1 (tests only) or unset')
  if (env.NODE_ENV === 'production')
    throw new ConfigError('CAIRN_TEST_CLOCK is for tests: refused where NODE_ENV is production')
  if (!['127.0.0.1', '::1', 'localhost'].includes(host))
    throw new ConfigError('CAIRN_TEST_CLOCK is for tests: the server must listen on loopback')
  return true
}

export function serveConfig(flags: Map<string, string>, env: NodeJS.ProcessEnv): Config {
  const pick = (o: Option): string | undefined => flags.get(o.flag) ?? (env[o.env] || undefined)
  const port = Number(pick(OPTIONS.port) ?? 8080)
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new ConfigError('--port must be 0 to 65535')
  const durability = (pick(OPTIONS.durability) ?? 'always') as Durability
  if (!['always', 'interval', 'none'].includes(durability)) {
    throw new ConfigError('--durability must be always, interval or none')
  }
  const logLevel = (pick(OPTIONS.logLevel) ?? 'info') as LogLevel
  if (!['debug', 'info', 'warn', 'error'].includes(logLevel)) {
    throw new ConfigError('--log-level must be debug, info, warn or error')
  }
  const cors = (pick(OPTIONS.corsOrigins) ?? '*').trim()
  const corsOrigins =
    cors === '*'
      ? ('*' as const)
      : cors
          .split(',')
          .map((s) => s.trim().replace(/\/$/, ''))
          .filter(Boolean)
  for (const o of corsOrigins === '*' ? [] : corsOrigins) {
    if (!/^https?:\/\/[^/]+$/.test(o))
      throw new ConfigError(`--cors-origins: ${o} is not an origin like https://app.example`)
  }
  const store = pick(OPTIONS.store)
  if (store !== undefined && !/^rediss?:\/\/[^\s]+$/.test(store))
    throw new ConfigError(
      '--store takes redis://[user:pass@]host:port[,host:port...] (or rediss://)',
    )
  const trust = flags.get(OPTIONS.trustProxy.flag) ?? env[OPTIONS.trustProxy.env] ?? ''
  const privateHooks =
    flags.get(OPTIONS.allowPrivateWebhooks.flag) ?? env[OPTIONS.allowPrivateWebhooks.env] ?? ''
  const token = pick(OPTIONS.operatorToken)
  if (token !== undefined && token.length < 16)
    throw new ConfigError('--operator-token must be at least 16 characters')
  const stripeApiUrl = pick(OPTIONS.stripeApiUrl)?.replace(/\/$/, '')
  if (stripeApiUrl !== undefined && !/^https?:\/\/[^/?#\s]+$/.test(stripeApiUrl))
    throw new ConfigError(
      '--stripe-api-url takes an origin such as https://api.stripe.com or http://127.0.0.1:12111',
    )
  const engine = engineTuning(pick)
  if (store !== undefined && Object.keys(engine).length > 0)
    throw new ConfigError('the engine options apply to the embedded store, not to --store')
  const host = pick(OPTIONS.host) ?? '0.0.0.0'
  const testClock = testClockWanted(env, host)
  if (testClock && store !== undefined)
    throw new ConfigError('CAIRN_TEST_CLOCK is for the embedded store: Redis keeps its own time')
  return {
    host,
    port,
    dataDir: path.resolve(pick(OPTIONS.dataDir) ?? './data'),
    store,
    durability,
    plansFile: path.resolve(pick(OPTIONS.plansFile) ?? DEFAULT_PLANS_FILE),
    corsOrigins,
    trustProxy: truthy(trust),
    logLevel,
    operatorToken: token,
    usageFlushMs: Number(env.CAIRN_USAGE_FLUSH_MS) > 0 ? Number(env.CAIRN_USAGE_FLUSH_MS) : 2000,
    stripeSecretKey: pick(OPTIONS.stripeSecretKey),
    stripeWebhookSecret: pick(OPTIONS.stripeWebhookSecret),
    stripeApiUrl,
    billingScanMs:
      Number(env.CAIRN_BILLING_SCAN_MS) > 0
        ? Math.min(Number(env.CAIRN_BILLING_SCAN_MS), 30_000)
        : 15_000,
    meterSkewMs: Number(env.CAIRN_TEST_METER_SKEW_MS) || 0,
    testClock,
    engine,
    allowPrivateWebhooks: truthy(privateHooks),
    webhookRetryMs:
      Number(env.CAIRN_WEBHOOK_RETRY_MS) > 0 ? Number(env.CAIRN_WEBHOOK_RETRY_MS) : 30_000,
  }
}
