// `cairn serve` settings: flags win over environment variables, which win over defaults.
import path from 'node:path'
import type { Durability } from '../store/types.js'
import type { LogLevel } from '../log.js'
import { DEFAULT_PLANS_FILE } from '../services/plans.js'

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

const OPTIONS: Record<keyof Omit<Config, 'usageFlushMs' | 'webhookRetryMs'>, Option> = {
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
  allowPrivateWebhooks: {
    flag: '--allow-private-webhooks',
    env: 'CAIRN_ALLOW_PRIVATE_WEBHOOKS',
    boolean: true,
  },
}

export const SERVE_FLAGS = Object.values(OPTIONS).map((o) => o.flag)

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
  return {
    host: pick(OPTIONS.host) ?? '0.0.0.0',
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
    allowPrivateWebhooks: truthy(privateHooks),
    webhookRetryMs:
      Number(env.CAIRN_WEBHOOK_RETRY_MS) > 0 ? Number(env.CAIRN_WEBHOOK_RETRY_MS) : 30_000,
  }
}
