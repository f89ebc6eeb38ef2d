// The change feed on Redis Cluster (docs/redis.md, "Change feed"). Every write script
// appends its changes to the namespace's stream, `c:{n:<ns>}:<g>:f`, with the id
// <version>-<seq>; reading history is one script (FEED_READ). Live changes: one poller per
// subscribed namespace in this process, whatever the number of its listeners, and one
// reader per master for all of them: one connection that subscribes to a sharded message
// each write script sends on its stream's name, and reads on the pipelined connection (a
// subscribed connection serves nothing else), beside one side connection per master for WAIT.
import calculateSlot from 'cluster-key-slot'
import type { Cluster, Redis } from 'ioredis'
import type { Change, Feed } from '../types.js'
import type { Commands } from './commands.js'
import { WAIT_MS } from './durable-writes.js'
import { type ClusterEntries, feedKey, meta, toChange } from './entries.js'
import { unavailable } from './errors.js'
import { type StreamEntry, Unconfirmed } from './feed-unconfirmed.js'

/** How often a poller reclaims expired entries, so an expiry is seen within seconds. */
const EXPIRE_EVERY_MS = 2000
const MAX_SEQ = '18446744073709551615'

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** A master's connection as a duplicate of ioredis's own: for what would block the pipelined one. */
function connectTo(cmd: Commands, owner: string): Redis {
  const master = (cmd.client as Cluster)
    .nodes('master')
    .find((n) => `${n.options.host}:${n.options.port}` === owner)
  if (!master) throw unavailable(`no master at ${owner}`)
  const conn = master.duplicate({
    lazyConnect: false,
    enableOfflineQueue: true,
    maxRetriesPerRequest: 1,
    retryStrategy: () => null,
  })
  conn.on('error', () => {})
  return conn
}

/** A subscriber: what it is handed, and what it is told when delivered changes were lost. */
interface FeedListener {
  changes(changes: Change[]): void
  lost(): void
}

/** One watched namespace of this process: its listeners, and where its stream was read to. */
class Poller {
  readonly listeners = new Set<FeedListener>()
  /** Changes delivered that no replica had confirmed: checked before anything more goes. */
  readonly unconfirmed = new Unconfirmed()
  stopped = false
  /** The stream and the id read to, once started; null while the namespace is not there. */
  stream: string | null = null
  last = ''
  g = ''
  /** The reader of the master it is read from, while placed. */
  reader: Reader | null = null

  constructor(
    readonly ns: string,
    private feed: ClusterFeed,
    private entries: ClusterEntries,
  ) {}

  /** Starts from `start` (retrying while the namespace is not reachable), then keeps watch. */
  async run(start: Promise<{ g: string; version: number }>): Promise<void> {
    for (;;) {
      try {
        const s = await start
        this.g = s.g
        this.last = `${s.version}-${MAX_SEQ}`
        break
      } catch {
        // The namespace is not there (yet), or Redis is not reachable: try again shortly.
        if (this.stopped) return
        await sleep(500)
        start = this.base()
      }
    }
    this.stream = feedKey(this.ns, this.g)
    this.feed.place(this)
    while (!this.stopped) {
      await sleep(EXPIRE_EVERY_MS)
      if (this.stopped) return
      try {
        // Entries past their expiry become deletes in the feed (one read when there are none).
        await this.entries.namespaceCounts(this.ns)
        const now = await this.entries.feedVersion(this.ns).catch(() => undefined)
        // Dropped (and maybe made again, at versions from 0): nothing more to deliver.
        if (now !== undefined && now.g !== this.g && this.stream !== null) {
          this.reader?.changed(this)
          this.stream = null
        } else if (this.unconfirmed.size > 0) {
          // A read checks the unconfirmed changes still stand, and lets them go once a
          // replica has them; until then, one each tick.
          this.reader?.behind(this)
        } else if (
          now !== undefined &&
          this.stream !== null &&
          now.version > Math.max(this.readTo(), this.askedTo)
        ) {
          // A write whose message never came (pub/sub delivers at most once; a front end of
          // an older version sends none) is read within one tick all the same. The read
          // takes everything up to that version the stream holds; versions it holds no
          // change of (an import moves the counter alone) are not read again every tick.
          this.askedTo = now.version
          this.reader?.behind(this)
        }
      } catch {}
    }
  }

  /** The namespace's version when the tick last had the stream read past what was read. */
  askedTo = 0

  /** The version read to: the stream id's first part. */
  readTo(): number {
    return this.last === '' ? 0 : Number(this.last.slice(0, this.last.indexOf('-')))
  }

  deliver(got: StreamEntry[], confirmed: boolean): void {
    this.last = got[got.length - 1]![0].toString()
    if (!confirmed) this.unconfirmed.add(got)
    const changes = got.map(toChange)
    for (const l of [...this.listeners]) {
      try {
        l.changes(changes)
      } catch {}
    }
  }

  /**
   * The master serving the stream now lacks changes this poller delivered (a failover lost
   * them): its listeners are told and let go, and the namespace gets a new poller for the
   * next ones, as what this one read to is no longer the stream's.
   */
  diverged(): void {
    const told = [...this.listeners]
    this.listeners.clear()
    this.feed.dropPoller(this)
    this.stop()
    for (const l of told) {
      try {
        l.lost()
      } catch {}
    }
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
    this.reader?.remove(this)
  }
}

/**
 * The live changes of every watched namespace whose slot one master serves. Redis Cluster
 * refuses one XREAD over streams of different slots, so each write script also sends an
 * empty sharded message on its stream's name (SPUBLISH, in the stream's own slot), and one
 * connection per master subscribes to the streams watched here (SSUBSCRIBE). A message makes
 * its namespace read its stream from where it was (XREAD without blocking, on the pipelined
 * connection), once however many arrive while a read is under way. With the master's side
 * connection (WAIT) that is two connections per master for a front end's watches.
 */
class Reader {
  private pollers = new Map<string, Poller>()
  private conn: Redis | undefined
  private stopped = false
  private reading = new Set<Poller>()
  private again = new Set<Poller>()

  constructor(
    readonly owner: string,
    private cmd: Commands,
    private feed: ClusterFeed,
  ) {}

  /** Reads `p`'s stream from now on; false when this master is no longer among ioredis's nodes. */
  add(p: Poller): boolean {
    const stream = p.stream
    if (stream === null) return true
    let conn: Redis
    try {
      conn = this.connection()
    } catch {
      return false
    }
    this.pollers.set(stream, p)
    p.reader = this
    // Subscribed, it reads what came before its subscription took.
    conn.ssubscribe(stream).then(
      () => this.read(p),
      () => this.lost(),
    )
    return true
  }

  remove(p: Poller): void {
    const stream = [...this.pollers].find(([, q]) => q === p)?.[0]
    if (stream === undefined) return
    this.pollers.delete(stream)
    p.reader = null
    this.conn?.sunsubscribe(stream).catch(() => {})
    if (this.pollers.size === 0) {
      this.stop()
      this.feed.forget(this)
    }
  }

  get size(): number {
    return this.pollers.size
  }

  /** The poller's stream changed (its namespace dropped): it is read no more. */
  changed(p: Poller): void {
    this.remove(p)
  }

  /** Reads `p`'s stream now: its namespace is past what was read, with no message said so. */
  behind(p: Poller): void {
    if (this.pollers.get(p.stream ?? '') === p) this.read(p)
  }

  private read(p: Poller): void {
    if (this.reading.has(p)) {
      this.again.add(p)
      return
    }
    this.reading.add(p)
    void this.readOnce(p).finally(() => {
      this.reading.delete(p)
      if (this.again.delete(p) && !p.stopped) this.read(p)
    })
  }

  private async readOnce(p: Poller): Promise<void> {
    for (;;) {
      const stream = p.stream
      if (stream === null || p.stopped) return
      let res: [Buffer, StreamEntry[]][] | null
      try {
        // Checked before anything after them goes: a failover that lost them is told
        // before the changes that took their versions again are passed over.
        if (p.unconfirmed.size > 0 && !(await this.standing(p, stream))) return
        res = await this.cmd.readCommand(
          stream,
          ['XREAD', 'COUNT', 1000, 'STREAMS', stream, p.last],
          true,
        )
      } catch {
        // Not answered (a slot moving, a master failing over): read again shortly.
        await sleep(200)
        continue
      }
      if (p.stopped || p.stream !== stream) return
      const got = res?.[0]?.[1] ?? []
      if (got.length === 0 && p.unconfirmed.size === 0) return
      // Delivered once a replica has it, like a write is acknowledged: WAIT counts from the
      // side connection's offset, set by its ECHO after the read, so one WAIT confirms what
      // the read found and every change delivered unconfirmed before it. Not confirmed in
      // time, it goes all the same (its master's AOF has it), and is checked from then on.
      const confirmed =
        !this.cmd.waits(meta(p.ns)) || (await this.feed.replicated(this.owner).catch(() => false))
      if (p.stopped || p.stream !== stream) return
      if (confirmed) p.unconfirmed.clear()
      if (got.length === 0) return
      p.deliver(got, confirmed)
      if (got.length < 1000) return
    }
  }

  /**
   * Whether the changes `p` delivered unconfirmed still stand on the master serving its
   * stream now; false after `p` diverged. The read after it lets them go once a replica
   * confirms them, with one WAIT for both (a stalled replica costs a read one WAIT_MS).
   * Throws when the stream cannot be read.
   */
  private async standing(p: Poller, stream: string): Promise<boolean> {
    const [from, to] = p.unconfirmed.range
    const res: StreamEntry[] = await this.cmd.readCommand(
      stream,
      ['XRANGE', stream, from, to, 'COUNT', p.unconfirmed.size + 1],
      true,
    )
    if (p.stopped || p.stream !== stream) return false
    if (!p.unconfirmed.standIn(res ?? [])) {
      p.diverged()
      return false
    }
    return true
  }

  private connection(): Redis {
    if (this.conn) return this.conn
    const conn = connectTo(this.cmd, this.owner)
    conn.on('smessageBuffer', (channel: Buffer) => {
      const p = this.pollers.get(channel.toString())
      if (p !== undefined) this.read(p)
    })
    conn.on('close', () => this.lost())
    this.conn = conn
    return conn
  }

  /** The connection closed (a failover, a master gone): every namespace is placed again. */
  private lost(): void {
    if (this.stopped) return
    this.stop()
    this.feed.forget(this)
    const moved = [...this.pollers.values()]
    this.pollers.clear()
    setTimeout(() => {
      for (const p of moved) {
        p.reader = null
        if (!p.stopped) this.feed.place(p)
      }
    }, 200).unref()
  }

  stop(): void {
    this.stopped = true
    const conn = this.conn
    this.conn = undefined
    conn?.disconnect()
  }
}

export class ClusterFeed implements Feed {
  private pollers = new Map<string, Poller>()
  private readers = new Map<string, Reader>()

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
    const owner = this.cmd.owners(meta(ns))?.[0]
    if (owner === undefined) throw unavailable(`no master for slot ${calculateSlot(meta(ns))}`)
    if (!(await this.replicated(owner)))
      throw unavailable('the history read was not confirmed by a replica in time')
    return got
  }

  /** A connection per master for what must not block the pipelined one (WAIT). */
  private sides = new Map<string, Redis>()

  /** Resolves once a replica of the master at `owner` has what it held before this call. */
  async replicated(owner: string): Promise<boolean> {
    const [, [err, acked]] = (await this.side(owner)
      .pipeline()
      .echo('w')
      .call('WAIT', '1', String(WAIT_MS))
      .exec()) as [unknown, [Error | null, number]]
    return !err && Number(acked) >= 1
  }

  /** The side connection to the master at `at` ("host:port"). */
  side(at: string): Redis {
    let conn = this.sides.get(at)
    if (conn !== undefined && conn.status !== 'end') return conn
    conn = connectTo(this.cmd, at)
    this.sides.set(at, conn)
    return conn
  }

  /** Reads `p`'s stream with the others of its slot's master (retried while none is known). */
  place(p: Poller): void {
    if (p.stopped) return
    const owner = this.cmd.owners(meta(p.ns))?.[0]
    if (owner === undefined) {
      setTimeout(() => this.place(p), 200).unref()
      return
    }
    let r = this.readers.get(owner)
    if (r === undefined) {
      r = new Reader(owner, this.cmd, this)
      this.readers.set(owner, r)
    }
    if (r.add(p)) return
    // The slot table still names a master ioredis has dropped (it was killed, and the table
    // is not read again yet): placed again shortly, as with no master known. Thrown from
    // here, on a timer, it ended the process.
    if (r.size === 0) {
      r.stop()
      this.forget(r)
    }
    setTimeout(() => this.place(p), 200).unref()
  }

  forget(r: Reader): void {
    if (this.readers.get(r.owner) === r) this.readers.delete(r.owner)
  }

  /** Lets go of a poller that diverged: the namespace's next subscriber starts a new one. */
  dropPoller(p: Poller): void {
    if (this.pollers.get(p.ns) === p) this.pollers.delete(p.ns)
  }

  subscribe(ns: string, listener: (changes: Change[]) => void, lost?: () => void): () => void {
    let poller = this.pollers.get(ns)
    if (!poller) {
      const p = new Poller(ns, this, this.entries)
      // Asked for now, in this turn: ahead of any later command of this process.
      p.run(p.base())
      this.pollers.set(ns, p)
      poller = p
    }
    const mine = poller
    // An object of its own, so the same listener subscribed twice unsubscribes once each.
    const own: FeedListener = { changes: listener, lost: () => lost?.() }
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
    for (const r of this.readers.values()) r.stop()
    this.readers.clear()
    for (const c of this.sides.values()) c.disconnect()
    this.sides.clear()
  }
}
