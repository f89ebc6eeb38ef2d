// The change feed on Redis Cluster (docs/redis.md, "Change feed"). Every write script
// appends its changes to the namespace's stream, `c:{n:<ns>}:<g>:f`, with the id
// <version>-<seq>; reading history is one script (FEED_READ). Live changes: one poller per
// subscribed namespace in this process, whatever the number of its listeners, blocking in
// XREAD on a connection of its own to the slot's master (a blocked connection serves
// nothing else, so never the pipelined one the requests use).
import calculateSlot from 'cluster-key-slot'
import type { Cluster, Redis } from 'ioredis'
import type { Change, Feed } from '../types.js'
import type { Commands } from './commands.js'
import { WAIT_MS } from './durable-writes.js'
import { type ClusterEntries, feedKey, meta, toChange } from './entries.js'
import { unavailable } from './errors.js'

/** How long one XREAD blocks: how soon a poller notices it has no listeners or the slot moved. */
const BLOCK_MS = 1000
/** How often a poller reclaims expired entries, so an expiry is seen within seconds. */
const EXPIRE_EVERY_MS = 2000
const MAX_SEQ = '18446744073709551615'

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

class Poller {
  readonly listeners = new Set<(changes: Change[]) => void>()
  stopped = false
  private conn: Redis | undefined

  constructor(
    private ns: string,
    private cmd: Commands,
    private entries: ClusterEntries,
  ) {}

  /** Runs until stop(); `start` resolves with where the changes to deliver begin. */
  async run(start: Promise<{ g: string; version: number }>): Promise<void> {
    let g: string
    let last: string
    for (;;) {
      try {
        const s = await start
        g = s.g
        last = `${s.version}-${MAX_SEQ}`
        break
      } catch {
        // The namespace is not there (yet), or Redis is not reachable: try again shortly.
        if (this.stopped) return
        await sleep(500)
        start = this.base()
      }
    }
    let expiredAt = 0
    while (!this.stopped) {
      try {
        if (Date.now() - expiredAt >= EXPIRE_EVERY_MS) {
          expiredAt = Date.now()
          // Entries past their expiry become deletes in the feed (one read when there are none).
          await this.entries.namespaceCounts(this.ns)
          const now = await this.entries.feedVersion(this.ns).catch(() => undefined)
          // Dropped (and maybe made again, at versions from 0): nothing more to deliver.
          if (now?.g !== g) {
            await sleep(BLOCK_MS)
            continue
          }
        }
        const conn = this.connection()
        const res = (await conn.xreadBuffer(
          'COUNT',
          1000,
          'BLOCK',
          BLOCK_MS,
          'STREAMS',
          feedKey(this.ns, g),
          last,
        )) as [Buffer, [Buffer, Buffer[]][]][] | null
        if (!res || res.length === 0 || this.stopped) continue
        const got = res[0]![1]
        if (got.length === 0) continue
        if (this.cmd.waits(meta(this.ns))) {
          // Delivered once a replica has it, like a write is acknowledged: WAIT counts from
          // this connection's offset, which Redis sets after each command (ECHO, as XREAD
          // served after blocking may not set it).
          await conn.pipeline().echo('w').call('WAIT', '1', String(WAIT_MS)).exec()
        }
        last = got[got.length - 1]![0].toString()
        const changes = got.map(toChange)
        for (const l of [...this.listeners]) {
          try {
            l(changes)
          } catch {}
        }
      } catch {
        // The slot moved (MOVED after a failover), the connection closed: a new one.
        this.drop()
        if (!this.stopped) await sleep(200)
      }
    }
    this.drop()
  }

  /**
   * Where delivery starts: the lower of the version seen by a read and by a write sent now,
   * so any write or read this process sends after subscribe() comes after it.
   */
  base(): Promise<{ g: string; version: number }> {
    // The one sent as a write waits for a replica and fails while none answers (a stalled
    // replica): the read alone then says where to start. Starting at a later version on a
    // retry would pass over the writes between (watch-session.ts fills a gap it sees, too).
    return Promise.allSettled([
      this.entries.feedVersion(this.ns),
      this.entries.feedVersion(this.ns, true),
    ]).then(([a, b]) => {
      const got = [a, b].flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []))
      if (got.length === 0) throw (a as PromiseRejectedResult).reason
      return got.reduce((x, y) => (x.version <= y.version ? x : y))
    })
  }

  stop(): void {
    this.stopped = true
    this.drop()
  }

  private connection(): Redis {
    if (this.conn) return this.conn
    const client = this.cmd.client as Cluster
    const owner = this.cmd.owners(meta(this.ns))?.[0]
    const master = client
      .nodes('master')
      .find((n) => `${n.options.host}:${n.options.port}` === owner)
    if (!master) throw new Error(`no master for slot ${calculateSlot(meta(this.ns))}`)
    const conn = master.duplicate({
      lazyConnect: false,
      enableOfflineQueue: true,
      maxRetriesPerRequest: 1,
      retryStrategy: () => null,
    })
    conn.on('error', () => {})
    this.conn = conn
    return conn
  }

  private drop(): void {
    this.conn?.disconnect()
    this.conn = undefined
  }
}

export class ClusterFeed implements Feed {
  private pollers = new Map<string, Poller>()

  constructor(
    private cmd: Commands,
    private entries: ClusterEntries,
  ) {}

  async version(ns: string): Promise<number> {
    return (await this.entries.feedVersion(ns)).version
  }

  /**
   * History as the master has it, once a replica has it too (where live delivery waits, so
   * does history): a change a failover would lose is never sent from history either. WAIT
   * counts from the side connection's offset, set by its ECHO after the read, so it covers
   * every change the read saw. Not confirmed within WAIT_MS: the read fails as unavailable.
   */
  async read(ns: string, since: number, limit: number): Promise<Change[] | 'expired'> {
    const got = await this.entries.feedRead(ns, since, limit)
    if (got === 'expired' || got.length === 0 || !this.cmd.waits(meta(ns))) return got
    const conn = this.side(ns)
    const [, [err, acked]] = (await conn
      .pipeline()
      .echo('w')
      .call('WAIT', '1', String(WAIT_MS))
      .exec()) as [unknown, [Error | null, number]]
    if (err || Number(acked) < 1)
      throw unavailable('the history read was not confirmed by a replica in time')
    return got
  }

  /** A connection per master for what must not block the pipelined one (WAIT). */
  private sides = new Map<string, Redis>()

  private side(ns: string): Redis {
    const owner = this.cmd.owners(meta(ns))?.[0]
    if (owner === undefined) throw unavailable(`no master for slot ${calculateSlot(meta(ns))}`)
    let conn = this.sides.get(owner)
    if (conn !== undefined && conn.status !== 'end') return conn
    const master = (this.cmd.client as Cluster)
      .nodes('master')
      .find((n) => `${n.options.host}:${n.options.port}` === owner)
    if (!master) throw unavailable(`no master for slot ${calculateSlot(meta(ns))}`)
    conn = master.duplicate({
      lazyConnect: false,
      enableOfflineQueue: true,
      maxRetriesPerRequest: 1,
      retryStrategy: () => null,
    })
    conn.on('error', () => {})
    this.sides.set(owner, conn)
    return conn
  }

  subscribe(ns: string, listener: (changes: Change[]) => void): () => void {
    let poller = this.pollers.get(ns)
    if (!poller) {
      const p = new Poller(ns, this.cmd, this.entries)
      // Asked for now, in this turn: ahead of any later command of this process.
      p.run(p.base())
      this.pollers.set(ns, p)
      poller = p
    }
    const mine = poller
    // A function of its own, so the same listener subscribed twice unsubscribes once each.
    const own = (changes: Change[]) => listener(changes)
    mine.listeners.add(own)
    return () => {
      mine.listeners.delete(own)
      if (mine.listeners.size === 0 && this.pollers.get(ns) === mine) {
        this.pollers.delete(ns)
        mine.stop()
      }
    }
  }

  close(): void {
    for (const p of this.pollers.values()) p.stop()
    this.pollers.clear()
    for (const c of this.sides.values()) c.disconnect()
    this.sides.clear()
  }
}
