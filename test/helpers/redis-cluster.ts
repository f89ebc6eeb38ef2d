// A real Redis Cluster for tests, from Debian's redis-server: three masters and three
// replicas on free loopback ports in a temporary directory, each with the append-only file
// synced on every write (`appendfsync always`), created with `redis-cli --cluster create`.
// A test can SIGKILL a master to make the cluster fail over. Without redis-server installed,
// `startRedisCluster` answers why and the test skips; a cluster that will not come up throws.
import { type ChildProcess, execFile, spawn, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { reapWithMe } from './reaper.js'

const run = promisify(execFile)

export interface RedisNode {
  port: number
  proc: ChildProcess
  dir: string
}

export interface RedisCluster {
  nodes: RedisNode[]
  /** `redis://127.0.0.1:p1,127.0.0.1:p2,...`, every node, as `cairn serve --store` takes it. */
  url: string
  /** The node timeout the cluster was started with: how soon a dead master is failed over. */
  nodeTimeoutMs: number
  /** The masters as the cluster sees them now. */
  masters(): Promise<RedisNode[]>
  /** SIGKILLs a node (a crash); resolves once it is gone. */
  kill(node: RedisNode): Promise<void>
  /** Resolves once every slot is served again (cluster_state:ok on every live node). */
  waitHealthy(timeoutMs?: number): Promise<void>
  /** Resolves once every master has a replica linked and in sync (WAIT can be answered). */
  waitReplicated(timeoutMs?: number): Promise<void>
  stop(): Promise<void>
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createServer()
    s.once('error', () => resolve(false))
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)))
  })
}

/**
 * A free port whose cluster bus port (port + 10000) is free too, both below the range the
 * kernel hands out for outgoing connections and `--port 0` (32768 and up), so nothing else
 * on the machine takes them between this check and redis-server's bind.
 */
async function freeNodePort(): Promise<number> {
  for (;;) {
    const port = 10000 + Math.floor(Math.random() * 12000)
    if ((await portFree(port)) && (await portFree(port + 10000))) return port
  }
}

async function cli(port: number, ...args: string[]): Promise<string> {
  const { stdout } = await run('redis-cli', ['-p', String(port), ...args], { timeout: 10_000 })
  return stdout
}

async function waitFor(what: string, ms: number, ok: () => Promise<boolean>): Promise<void> {
  const end = Date.now() + ms
  for (;;) {
    try {
      if (await ok()) return
    } catch {}
    if (Date.now() > end) throw new Error(`redis cluster: ${what} within ${ms} ms`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

/** Starts the cluster, or returns why it cannot be started here (a tool is missing). */
export async function startRedisCluster(
  opts: { nodeTimeoutMs?: number } = {},
): Promise<RedisCluster | string> {
  for (const tool of ['redis-server', 'redis-cli']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0)
      return `${tool} is not installed (apt-get install redis-server)`
  }
  const nodeTimeoutMs = opts.nodeTimeoutMs ?? 2000
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-redis-'))
  const nodes: RedisNode[] = []
  /** Starts one node; a port taken meanwhile by someone else is tried again with another. */
  const start = async (dir: string): Promise<RedisNode> => {
    for (let attempt = 0; ; attempt++) {
      const port = await freeNodePort()
      const proc = spawn(
        'redis-server',
        [
          '--port',
          String(port),
          '--bind',
          '127.0.0.1',
          '--dir',
          dir,
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          'nodes.conf',
          '--cluster-node-timeout',
          String(nodeTimeoutMs),
          '--appendonly',
          'yes',
          '--appendfsync',
          'always',
          '--save',
          '',
          '--daemonize',
          'no',
          '--protected-mode',
          'no',
          '--loglevel',
          'warning',
        ],
        { stdio: 'ignore' },
      )
      if (proc.pid !== undefined) reapWithMe([proc.pid])
      const exited = new Promise<'exited'>((r) => proc.once('exit', () => r('exited')))
      const up = waitFor(
        `node ${port} answers`,
        15_000,
        async () => (await cli(port, 'PING')).trim() === 'PONG',
      ).then(
        () => 'up' as const,
        () => 'slow' as const,
      )
      const outcome = await Promise.race([up, exited])
      if (outcome === 'up') return { port, proc, dir }
      proc.kill('SIGKILL')
      if (attempt >= 2) throw new Error(`redis-server on port ${port}: ${outcome}`)
    }
  }
  try {
    for (let i = 0; i < 6; i++) {
      const dir = path.join(root, `n${i}`)
      fs.mkdirSync(dir)
      nodes.push(await start(dir))
    }
    await run(
      'redis-cli',
      [
        '--cluster',
        'create',
        ...nodes.map((n) => `127.0.0.1:${n.port}`),
        '--cluster-replicas',
        '1',
        '--cluster-yes',
      ],
      { timeout: 30_000 },
    )
  } catch (err) {
    // redis-server is here but the cluster would not come up: a failure, not a reason to skip.
    for (const n of nodes) n.proc.kill('SIGKILL')
    fs.rmSync(root, { recursive: true, force: true })
    throw new Error(`could not start a redis cluster: ${(err as Error).message}`)
  }
  const alive = () => nodes.filter((n) => n.proc.exitCode === null && n.proc.signalCode === null)
  const cluster: RedisCluster = {
    nodes,
    url: `redis://${nodes.map((n) => `127.0.0.1:${n.port}`).join(',')}`,
    nodeTimeoutMs,
    async masters() {
      const out: RedisNode[] = []
      for (const n of alive()) {
        if ((await cli(n.port, 'ROLE')).startsWith('master')) out.push(n)
      }
      return out
    },
    async kill(node) {
      if (node.proc.exitCode !== null || node.proc.signalCode !== null) return
      const gone = new Promise((r) => node.proc.once('exit', r))
      node.proc.kill('SIGKILL')
      await gone
    },
    async waitHealthy(timeoutMs = 30_000) {
      await waitFor('every slot served', timeoutMs, async () => {
        for (const n of alive()) {
          const info = await cli(n.port, 'CLUSTER', 'INFO')
          if (!info.includes('cluster_state:ok') || !info.includes('cluster_slots_ok:16384'))
            return false
        }
        return true
      })
    },
    async waitReplicated(timeoutMs = 30_000) {
      await waitFor('every master has its replica linked', timeoutMs, async () => {
        for (const m of await cluster.masters()) {
          const info = await cli(m.port, 'INFO', 'replication')
          if (!/connected_slaves:[1-9]/.test(info) || !/slave0:.*state=online/.test(info))
            return false
        }
        return true
      })
    },
    async stop() {
      await Promise.all(nodes.map((n) => cluster.kill(n)))
      fs.rmSync(root, { recursive: true, force: true })
    },
  }
  await cluster.waitHealthy()
  // Replicas link up a moment after the slots are assigned; until then WAIT answers 0.
  await cluster.waitReplicated()
  return cluster
}

/**
 * A cluster for one test file, stopped when it ends; undefined (the file skipped, with the
 * reason) where redis-server is not installed.
 */
export async function clusterFor(t: {
  skip(why: string): void
  teardown(fn: () => unknown): void
}): Promise<RedisCluster | undefined> {
  const started = await startRedisCluster()
  if (typeof started === 'string') {
    t.skip(started)
    return undefined
  }
  t.teardown(() => started.stop())
  return started
}
