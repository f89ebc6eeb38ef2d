// Shared setup for the client tests: a real server with roomy and tight plans, accounts,
// and a Cairn client pointed at it.
import { execFile } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { Cairn, type ClientOptions } from '../../client/src/index.js'
import { plan } from '../helpers/plans.js'
import { startServer } from '../helpers/server.js'

export type Server = Awaited<ReturnType<typeof startServer>>

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')

/** Plans: `free` never gets in the way; the others each make one limit easy to reach. */
export const plans = {
  plans: [
    plan({ id: 'free' }),
    plan({ id: 'slow', ratePerSecond: 1, burst: 3 }),
    plan({ id: 'small', maxNamespaces: 2, maxStorageBytes: 4096, maxValueBytes: 1024 }),
    plan({ id: 'daily', requestsPerDay: 3 }),
  ],
  default: 'free',
  upgradeUrl: null,
}

interface Tap {
  teardown(fn: () => unknown): void
}

/** Starts a real server for one test file; it stops when the test ends. */
export async function server(
  t: Tap,
  opts: { args?: string[]; testClock?: boolean } = {},
): Promise<Server> {
  const srv = await startServer({ plans, args: opts.args, testClock: opts.testClock })
  t.teardown(() => srv.stop())
  return srv
}

/** A new account on `srv` and a client for it (retries quick so tests stay short). */
export async function account(
  srv: Server,
  opts: { plan?: string; client?: ClientOptions } = {},
): Promise<{ kv: Cairn; apiKey: string; email: string }> {
  const acct = await srv.createAccount(undefined, opts.plan ? { plan: opts.plan } : undefined)
  const kv = new Cairn(acct.apiKey, {
    baseUrl: srv.baseUrl,
    retries: { limit: 3, baseDelayMs: 20, maxDelayMs: 200 },
    ...opts.client,
  })
  return { kv, apiKey: acct.apiKey, email: acct.email }
}

let seq = 0
/** A fresh namespace name (not created). */
export function nsName(stem = 'ns'): string {
  return `${stem}-${process.pid}-${++seq}`
}

/** Creates an extra API key through the CLI (which talks to the live server) and returns its secret. */
export async function cliKey(srv: Server, email: string, args: string[]): Promise<string> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [
      '--import',
      'tsx',
      'server/cli/index.ts',
      'key',
      'create',
      '--email',
      email,
      '--data',
      srv.dataDir,
      ...args,
      '--json',
    ],
    { cwd: root },
  )
  const m = /cairn_[A-Za-z0-9]{32,}/.exec(stdout)
  if (!m) throw new Error(`no API key in CLI output: ${stdout}`)
  return m[0]
}
