// Starts a real Cairn server in a child process on a free port, on a fresh data directory,
// for tests. Accounts are made through the server's operator endpoint, as the command line
// does when the server is running.
import { type ChildProcess, spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { reapWithMe } from './reaper.js'

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const cliPath = path.join(root, 'server/cli/index.ts')

export interface StartOptions {
  /** The plans file's content; the repository's server/plans.json when omitted. */
  plans?: object
  /** Extra `serve` flags. */
  args?: string[]
  env?: Record<string, string>
  /** Reuse a data directory (it is then not removed by stop). */
  dataDir?: string
  /** Extra flags for node itself, e.g. ['--import', file] to load a test hook. */
  nodeArgs?: string[]
  /**
   * Runs the server on the test clock (CAIRN_TEST_CLOCK=1): time stands still until the test
   * moves it with passTime. Not on Redis, which keeps its own time: there passTime waits.
   */
  testClock?: boolean
}

export interface MadeAccount {
  accountId: string
  email: string
  apiKey: string
  keyId: string
}

let seq = 0

export class TestServer {
  port = 0
  proc: ChildProcess | null = null
  /** Every line the server printed on stdout (its JSON log) and stderr. */
  readonly lines: string[] = []
  stderr = ''
  private exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }> = Promise.resolve(
    { code: 0, signal: null },
  )
  private ownDir: boolean

  constructor(
    readonly dataDir: string,
    readonly plansFile: string | undefined,
    readonly args: string[],
    readonly env: Record<string, string>,
    ownDir: boolean,
    readonly nodeArgs: string[] = [],
  ) {
    this.ownDir = ownDir
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`
  }

  get baseUrl(): string {
    return `${this.url}/v1`
  }

  /** Starts the process and resolves once it logs that it listens. */
  async start(): Promise<void> {
    const argv = [
      '--import',
      'tsx',
      ...this.nodeArgs,
      cliPath,
      'serve',
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      '--data',
      this.dataDir,
    ]
    if (this.plansFile) argv.push('--plans', this.plansFile)
    // The suites that run on every backend (test/store/backends.test.ts) set this.
    if (process.env.CAIRN_TEST_STORE && !this.args.includes('--store'))
      argv.push('--store', process.env.CAIRN_TEST_STORE)
    argv.push(...this.args)
    const proc = spawn(process.execPath, argv, {
      cwd: root,
      env: { ...process.env, CAIRN_USAGE_FLUSH_MS: '250', ...this.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    if (proc.pid !== undefined) reapWithMe([proc.pid])
    this.proc = proc
    this.exited = new Promise((resolve) =>
      proc.on('exit', (code, signal) => resolve({ code, signal })),
    )
    let partial = ''
    const listening = new Promise<number>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(new Error(`server did not start in 30 s: ${this.stderr}${this.lines.join('\n')}`)),
        30_000,
      )
      proc.stdout!.setEncoding('utf8')
      proc.stdout!.on('data', (chunk: string) => {
        partial += chunk
        const parts = partial.split('\n')
        partial = parts.pop()!
        for (const line of parts) {
          this.lines.push(line)
          try {
            const msg = JSON.parse(line)
            if (msg.msg === 'listening') {
              clearTimeout(timer)
              resolve(msg.port)
            }
          } catch {}
        }
      })
      proc.stderr!.setEncoding('utf8')
      proc.stderr!.on('data', (chunk: string) => {
        this.stderr += chunk
      })
      proc.on('exit', (code, signal) => {
        clearTimeout(timer)
        reject(
          new Error(
            `server exited (${code ?? signal}) before listening: ${this.stderr}${this.lines.join('\n')}`,
          ),
        )
      })
    })
    this.port = await listening
  }

  /** SIGTERM, as an operator stops it; resolves with how it exited. */
  async terminate(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (!this.proc || this.proc.exitCode !== null || this.proc.signalCode !== null)
      return this.exited
    this.proc.kill('SIGTERM')
    return this.exited
  }

  /** SIGKILL: a crash. */
  async kill(): Promise<void> {
    if (!this.proc || this.proc.exitCode !== null || this.proc.signalCode !== null) return
    this.proc.kill('SIGKILL')
    await this.exited
  }

  async restart(): Promise<void> {
    await this.terminate()
    await this.start()
  }

  async stop(): Promise<void> {
    await this.kill().catch(() => {})
    if (this.proc && this.proc.exitCode === null && this.proc.signalCode === null)
      await this.terminate()
    if (this.ownDir) fs.rmSync(this.dataDir, { recursive: true, force: true })
  }

  /** Whether this server runs on the test clock (StartOptions.testClock, embedded only). */
  get onTestClock(): boolean {
    return this.env.CAIRN_TEST_CLOCK === '1'
  }

  /**
   * Lets `ms` pass for the server: on the test clock at once, and exactly; on Redis, which
   * keeps its own time, by waiting (at least `ms`, so a deadline is surely behind it).
   */
  async passTime(ms: number): Promise<void> {
    if (this.onTestClock) await this.operator('clock.advance', { ms })
    else await new Promise((r) => setTimeout(r, ms))
  }

  /** The server's time now: its test clock's, or the wall's. */
  async now(): Promise<number> {
    return this.onTestClock ? (await this.operator('clock.advance', { ms: 0 })).now : Date.now()
  }

  /** Runs an operator command on the running server, as the command line would. */
  async operator(command: string, args: Record<string, unknown>): Promise<any> {
    const token = fs.readFileSync(path.join(this.dataDir, 'operator.token'), 'utf8').trim()
    const res = await fetch(`${this.url}/_operator/${command}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-operator-token': token },
      body: JSON.stringify(args),
    })
    const body: any = await res.json()
    if (!res.ok) throw new Error(`${command}: ${res.status} ${JSON.stringify(body)}`)
    return body
  }

  async createAccount(
    email?: string,
    opts: { plan?: string; password?: string } = {},
  ): Promise<MadeAccount> {
    const e = email ?? `user${process.pid}-${++seq}-${Date.now()}@example.com`
    const out = await this.operator('account.create', { email: e, ...opts })
    return {
      accountId: out.account.id,
      email: out.account.email,
      apiKey: out.apiKey.secret,
      keyId: out.apiKey.key.id,
    }
  }
}

function testClockEnv(opts: StartOptions): Record<string, string> {
  const env = { ...opts.env }
  const onRedis = opts.args?.includes('--store') || Boolean(process.env.CAIRN_TEST_STORE)
  if (opts.testClock && !onRedis) env.CAIRN_TEST_CLOCK = '1'
  return env
}

export async function startServer(opts: StartOptions = {}): Promise<TestServer> {
  const ownDir = opts.dataDir === undefined
  const dataDir = opts.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-server-'))
  let plansFile: string | undefined
  if (opts.plans) {
    plansFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-plans-')), 'plans.json')
    fs.writeFileSync(plansFile, JSON.stringify(opts.plans))
  }
  const srv = new TestServer(
    dataDir,
    plansFile,
    opts.args ?? [],
    testClockEnv(opts),
    ownDir,
    opts.nodeArgs ?? [],
  )
  try {
    await srv.start()
  } catch (err) {
    await srv.stop()
    throw err
  }
  return srv
}
