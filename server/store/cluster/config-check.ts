// Refusing to start on a Redis whose configuration cannot keep the durability asked for,
// rather than acknowledging writes it may lose. 'always' needs every node (replicas become
// masters) to append every write to its AOF and fsync it before answering; 'interval'
// needs the AOF at least (fsync every second); 'none' takes Redis as it is.
import type { Cluster, Redis } from 'ioredis'
import type { Durability } from '../../../engine/types.js'
import { within } from '../within.js'

async function setting(node: { call(...a: string[]): Promise<unknown> }, name: string) {
  const r = (await node.call('CONFIG', 'GET', name)) as string[]
  return String(r[1] ?? '')
}

/** How long a node is waited for: one that does not answer is passed over, not waited for. */
const ANSWER_MS = 2000

/** What `asked` resolves with, or undefined if it fails or takes longer than ANSWER_MS. */
const answered = <T>(asked: Promise<T>) => within(asked, ANSWER_MS, undefined)

/**
 * Throws when a node that answers is configured below the durability asked for. Resolves
 * with the nodes that did not answer in time (a replica frozen, a host cut off): a front end
 * must be able to start, and a command run, while part of the cluster is out, and those
 * nodes are checked again only by a restart, so the caller says which they are.
 */
export async function checkConfiguration(
  client: Cluster,
  durability: Durability,
): Promise<string[]> {
  if (durability === 'none') return []
  const problems: string[] = []
  const silent: string[] = []
  // The client keeps connections to masters only (reads go to masters): a replica, which a
  // failover makes a master, is reached on a connection of its own for the check.
  const masters = client.nodes('master')
  const pool = new Map(masters.map((n) => [`${n.options.host}:${n.options.port}`, n]))
  const extra: Redis[] = []
  const nodeAt = (at: string): Redis => {
    const own = pool.get(at)
    if (own !== undefined) return own
    const colon = at.lastIndexOf(':')
    const conn = masters[0]!.duplicate({
      host: at.slice(0, colon),
      port: Number(at.slice(colon + 1)),
      lazyConnect: false,
      enableOfflineQueue: true,
      maxRetriesPerRequest: 1,
      retryStrategy: () => null,
    })
    conn.on('error', () => {})
    extra.push(conn)
    return conn
  }
  const checked = new Set<string>()
  const check = async (at: string): Promise<void> => {
    if (checked.has(at)) return
    checked.add(at)
    const node = nodeAt(at)
    const got = await answered(
      Promise.all([setting(node as any, 'appendonly'), setting(node as any, 'appendfsync')]),
    )
    if (got === undefined) return void silent.push(at)
    const [aof, fsync] = got
    if (aof !== 'yes')
      problems.push(`${at} has appendonly ${aof || 'unknown'} (set appendonly yes)`)
    else if (durability === 'always' && fsync !== 'always')
      problems.push(`${at} has appendfsync ${fsync} (set appendfsync always)`)
  }
  // Each master is checked at once, beside asking it for its replicas (INFO replication),
  // which the cluster's own tables may not list yet right after they joined; each replica
  // as soon as its master names it. One after the other, a stopped master cost a start
  // ANSWER_MS twice.
  await Promise.all(
    masters.map(async (m) => {
      const own = check(`${m.options.host}:${m.options.port}`)
      const info = String((await answered(m.info('replication'))) ?? '')
      const replicas = [...info.matchAll(/^slave\d+:ip=([^,]+),port=(\d+)/gm)]
      await Promise.all([own, ...replicas.map((r) => check(`${r[1]}:${r[2]}`))])
    }),
  )
  for (const conn of extra) conn.disconnect()
  if (problems.length > 0) {
    throw new Error(
      `Redis cannot keep --durability ${durability}: ${problems.sort().join('; ')}. ` +
        'Change the Redis configuration, or start with --durability none to accept losing acknowledged writes.',
    )
  }
  return silent.sort()
}
