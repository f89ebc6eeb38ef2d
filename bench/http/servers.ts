// The servers under test, each pinned to one core: a bare uWebSockets.js app (the ceiling),
// Cairn started as users start it (the built CLI, on its engine or on Redis), and webdis in
// front of redis-server.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')

export interface Server {
  name: string
  url: string
  pids: number[]
  stop(): Promise<void>
}

export function has(cmd: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

/** CPU seconds (user + system) a process has used so far. */
export function cpuSeconds(pid: number): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) / 100
  } catch {
    return 0
  }
}

function pinned(
  core: number,
  cmd: string,
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
): ChildProcess {
  return spawn('taskset', ['-c', String(core), cmd, ...args], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
}

function waitLine(p: ChildProcess, pred: (line: string) => boolean, what: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let buf = ''
    let err = ''
    const timer = setTimeout(() => reject(new Error(`${what} did not start: ${err}${buf}`)), 30_000)
    p.stdout!.on('data', (d) => {
      buf += d
      for (const line of buf.split('\n')) {
        if (pred(line)) {
          clearTimeout(timer)
          resolve(line)
        }
      }
    })
    p.stderr!.on('data', (d) => {
      err += d
    })
    p.on('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`${what} exited (${code}): ${err}${buf}`))
    })
  })
}

function stopper(p: ChildProcess): () => Promise<void> {
  return () =>
    new Promise((resolve) => {
      if (p.exitCode !== null || p.signalCode !== null) return resolve()
      p.removeAllListeners('exit')
      p.on('exit', () => resolve())
      p.kill('SIGTERM')
      setTimeout(() => p.kill('SIGKILL'), 15_000).unref()
    })
}

export async function startCeiling(core: number): Promise<Server> {
  const p = pinned(core, process.execPath, [
    '--import',
    'tsx',
    path.join(root, 'bench/http/ceiling.ts'),
  ])
  const line = await waitLine(p, (l) => /^port \d+/.test(l), 'ceiling')
  return {
    name: 'ceiling',
    url: `http://127.0.0.1:${line.split(' ')[1]}`,
    pids: [p.pid!],
    stop: stopper(p),
  }
}

export async function startCairn(
  core: number,
  dataDir: string,
  plansFile: string,
  extra: string[] = [],
  /** Flags for node itself, e.g. `--cpu-prof` (which NODE_OPTIONS refuses). */
  nodeArgs: string[] = [],
  /** The checkout whose built CLI runs (another build beside this one, for an A/B). */
  from = root,
): Promise<Server> {
  const cli = path.join(from, 'dist/server/cli/index.js')
  const p = pinned(
    core,
    process.execPath,
    [
      ...nodeArgs,
      cli,
      'serve',
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      '--data',
      dataDir,
      '--plans',
      plansFile,
      ...extra,
    ],
    {
      ...process.env,
      CAIRN_LOG_LEVEL: 'info',
    },
  )
  const line = await waitLine(p, (l) => l.includes('"listening"'), 'cairn')
  return {
    name: extra.includes('--store') ? 'cairn-redis' : 'cairn',
    url: `http://127.0.0.1:${JSON.parse(line).port}`,
    pids: [p.pid!],
    stop: stopper(p),
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer()
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port
      s.close(() => resolve(port))
    })
  })
}

async function waitPort(port: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const ok = await new Promise<boolean>((resolve) => {
      const c = net.connect(port, '127.0.0.1', () => {
        c.destroy()
        resolve(true)
      })
      c.on('error', () => resolve(false))
    })
    if (ok) return
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error(`nothing listens on ${port}`)
}

export interface RedisServer {
  port: number
  pid: number
  stop(): Promise<void>
}

/**
 * redis-server on `core`: without persistence for the plain webdis case, or as a one-node
 * Redis Cluster holding every slot with its AOF fsynced on every write, which Cairn (with
 * --store) and webdis can both use: the same Redis behind both HTTP front ends.
 */
export async function startRedis(
  core: number,
  dir: string,
  mode: 'plain' | 'cluster',
): Promise<RedisServer> {
  const port = await freePort()
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--dir', dir]
  if (mode === 'plain') args.push('--appendonly', 'no')
  else
    args.push(
      '--appendonly',
      'yes',
      '--appendfsync',
      'always',
      '--cluster-enabled',
      'yes',
      '--cluster-config-file',
      path.join(dir, `nodes-${port}.conf`),
      // A node that never met another does not know its own address; the client needs it.
      '--cluster-announce-ip',
      '127.0.0.1',
    )
  const redis = pinned(core, 'redis-server', args)
  await waitPort(port)
  if (mode === 'cluster') {
    execFileSync('redis-cli', ['-p', String(port), 'CLUSTER', 'ADDSLOTSRANGE', '0', '16383'])
    for (let i = 0; ; i++) {
      const info = execFileSync('redis-cli', ['-p', String(port), 'CLUSTER', 'INFO']).toString()
      if (info.includes('cluster_state:ok')) break
      if (i > 200) throw new Error('the one-node Redis Cluster did not come up')
      await new Promise((r) => setTimeout(r, 50))
    }
  }
  return { port, pid: redis.pid!, stop: stopper(redis) }
}

/** webdis in front of the Redis on `redisPort`, on `core`. */
export async function startWebdis(
  core: number,
  dir: string,
  redis: RedisServer,
  name = 'webdis',
  threads = 1,
): Promise<Server> {
  const webdisPort = await freePort()
  const conf = path.join(dir, `webdis-${webdisPort}.json`)
  fs.writeFileSync(
    conf,
    JSON.stringify({
      redis_host: '127.0.0.1',
      redis_port: redis.port,
      http_host: '127.0.0.1',
      http_port: webdisPort,
      threads,
      pool_size: 20,
      daemonize: false,
      websockets: false,
      database: 0,
      verbosity: 1,
      logfile: path.join(dir, 'webdis.log'),
    }),
  )
  const webdis = pinned(core, 'webdis', [conf])
  await waitPort(webdisPort)
  return {
    name,
    url: `http://127.0.0.1:${webdisPort}`,
    pids: [webdis.pid!, redis.pid],
    stop: stopper(webdis),
  }
}
