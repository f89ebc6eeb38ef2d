// Connecting to Redis Cluster with ioredis. ioredis over node-redis for its cluster
// handling: it follows MOVED and ASK by itself, refreshes the slot table when a node fails,
// retries commands while the cluster is down (CLUSTERDOWN, TRYAGAIN) or failing over, keeps
// them queued meanwhile, and routes a pipeline to the master of its slot. That is how reads
// go; writes use its connection to each master directly, and are never sent twice
// (durable-writes.ts; docs/redis.md, "Client").
import { Cluster, type ClusterOptions } from 'ioredis'

export interface RedisUrl {
  nodes: { host: string; port: number }[]
  username?: string
  password?: string
  tls: boolean
}

/** `redis://[user:pass@]host:port[,host:port...]`, or `rediss://` for TLS. */
export function parseRedisUrl(url: string): RedisUrl {
  const m = /^(rediss?):\/\/(.+)$/.exec(url)
  if (!m) throw new Error('the store URL must start with redis:// or rediss://')
  let rest = m[2]!.replace(/\/.*$/, '')
  let username: string | undefined
  let password: string | undefined
  const at = rest.lastIndexOf('@')
  if (at >= 0) {
    const auth = rest.slice(0, at)
    rest = rest.slice(at + 1)
    const colon = auth.indexOf(':')
    username = decodeURIComponent(colon < 0 ? '' : auth.slice(0, colon)) || undefined
    password = decodeURIComponent(colon < 0 ? auth : auth.slice(colon + 1))
  }
  const nodes = rest.split(',').map((hp) => {
    const hm = /^\[?([^\]]+?)\]?:(\d+)$/.exec(hp.trim())
    if (!hm) throw new Error(`"${hp}" in the store URL is not host:port`)
    return { host: hm[1]!, port: Number(hm[2]) }
  })
  return { nodes, username, password, tls: m[1] === 'rediss' }
}

/**
 * How long a command waits for its node's answer before it fails as unavailable. A master
 * that stops answering but keeps its connection (a frozen process, a partition, a host that
 * hangs) would otherwise hold every command sent to it until it came back; the cluster fails
 * it over after its node timeout, and a command that timed out makes the slot table be read
 * every second for a while (durable-writes.ts, silent()), so the promoted replica is found
 * and ioredis closes the connection to the one it replaced. Longer than anything a command
 * of ours waits for on a healthy master: a WAIT's second, an XREAD's.
 */
export const ANSWER_MS = 3000

export function connectCluster(url: RedisUrl): Cluster {
  const options: ClusterOptions = {
    // Masters only: a replica may lag, and a read after a write on another front end must
    // see it.
    scaleReads: 'master',
    enableOfflineQueue: true,
    // Commands issued in one turn of the event loop go out in one write per node: under
    // concurrent requests, far fewer system calls on both sides.
    enableAutoPipelining: true,
    // Except a GET's plain reads, which go one command each (commands.ts says why).
    autoPipeliningIgnoredCommands: ['hmget', 'hget'],
    // While a master fails over, commands wait and are retried rather than fail at once.
    clusterRetryStrategy: (times) => Math.min(100 * times, 1000),
    retryDelayOnFailover: 200,
    retryDelayOnClusterDown: 200,
    retryDelayOnTryAgain: 200,
    // Also the bound on CLUSTERDOWN retries, 200 ms apart: 16 is 3.2 s, past an election
    // after a master is failed, and a cluster that stays down (a slot range with no master
    // left) answers 503 in that time rather than after 64 tries, 12.8 s.
    maxRedirections: 16,
    // A node asked for the table that does not answer in a second is passed for the next:
    // one that has stopped answering is as likely as any other to be asked first.
    slotsRefreshTimeout: 1000,
    // No clusterNodeRetryStrategy: a node's connection that closes is dropped, never made
    // again, so nothing it sent is sent twice: a durable write that lost its connection is
    // refused, not run again (durable-writes.ts).
    redisOptions: {
      username: url.username,
      password: url.password,
      tls: url.tls ? {} : undefined,
      connectTimeout: 5000,
      commandTimeout: ANSWER_MS,
      maxRetriesPerRequest: 20,
    },
  }
  return new Cluster(url.nodes, options)
}
