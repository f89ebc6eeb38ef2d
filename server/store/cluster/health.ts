// Whether the cluster serves, for /readyz and the storage-state metric. The client's own
// state says only whether it holds a slot table: a master that stops answering, or a cluster
// that has lost a slot range (cluster_state:fail, when it refuses every command), leaves it
// `ready`. So every master is asked for its view of the cluster each second. A cluster that
// says it is failing refuses everything (Redis's default, cluster-require-full-coverage): the
// front end is then failed, and taken out of rotation. A master that does not answer while
// the rest do only fails the namespaces and accounts it holds: the front end is then
// degraded, still ready, since another front end would meet the same master.
import type { Cluster, Redis } from 'ioredis'
import type { StoreHealth } from '../types.js'
import { within } from '../within.js'

const PROBE_MS = 1000
/** A master that has not answered a probe in this long is called silent (before the next). */
const ANSWER_MS = 800

export class ClusterHealth {
  private state: StoreHealth = { state: 'ok' }
  /** Probes sent and not yet answered, by node: never more than one per node. */
  private waiting = new Set<string>()
  private timer: NodeJS.Timeout

  constructor(private client: Cluster) {
    this.timer = setInterval(() => this.probe(), PROBE_MS)
    this.timer.unref()
  }

  now(): StoreHealth {
    if (this.client.status !== 'ready')
      return { state: 'failed', reason: `Redis Cluster connection is ${this.client.status}` }
    return this.state
  }

  close(): void {
    clearInterval(this.timer)
  }

  private async probe(): Promise<void> {
    // The masters the slot table names, not the client's open connections: a master that
    // died took its connection with it (connect.ts makes none again), and would otherwise
    // simply drop out of the probe while its slots have nobody to answer for them.
    const pool = new Map<string, Redis>()
    for (const node of this.client.nodes('master'))
      pool.set(`${node.options.host}:${node.options.port}`, node)
    const named = new Set<string>()
    for (const owners of this.client.slots) if (owners?.[0] !== undefined) named.add(owners[0])
    const masters = named.size > 0 ? [...named] : [...pool.keys()]
    const views = await Promise.all(
      masters.map((name) => {
        const node = pool.get(name)
        return node === undefined ? { name, view: undefined } : this.view(node)
      }),
    )
    const failing = views.find((v) => v.view !== undefined && v.view !== 'ok')
    const silent = views.filter((v) => v.view === undefined).map((v) => v.name)
    // The slot table is read again while something is wrong: with no requests going to the
    // silent master, nothing else would tell the client that a replica has taken over.
    if (failing || silent.length > 0) this.client.refreshSlotsCache()
    if (failing)
      this.state = {
        state: 'failed',
        reason: `Redis Cluster is down (${failing.name} says cluster_state:${failing.view}): it refuses commands until every slot has a master again`,
      }
    else if (silent.length === masters.length && masters.length > 0)
      this.state = { state: 'failed', reason: 'no Redis master answers' }
    else if (silent.length > 0)
      this.state = {
        state: 'degraded',
        reason: `Redis master ${silent.join(', ')} does not answer: what it holds is refused until it does, or a replica takes over`,
      }
    else this.state = { state: 'ok' }
  }

  /** A master's cluster_state, or undefined when it does not answer within ANSWER_MS. */
  private async view(node: Redis): Promise<{ name: string; view: string | undefined }> {
    const name = `${node.options.host}:${node.options.port}`
    if (this.waiting.has(name)) return { name, view: undefined }
    this.waiting.add(name)
    const asked = node.cluster('INFO').then(
      (info) => /cluster_state:(\w+)/.exec(String(info))?.[1] ?? 'ok',
      // An error the node answered with (NOPERM from an ACL) is an answer, and says nothing
      // about the cluster; but one still loading its data (LOADING, MASTERDOWN) serves
      // nothing, and counts as silent, as a timeout or a lost connection does.
      (err: Error) =>
        err?.name === 'ReplyError' && !/^(LOADING|MASTERDOWN)/.test(err.message) ? 'ok' : undefined,
    )
    // The answer, when it comes, lets the next probe ask this node again.
    asked.finally(() => this.waiting.delete(name))
    const view = await within(asked, ANSWER_MS, undefined)
    return { name, view }
  }
}
