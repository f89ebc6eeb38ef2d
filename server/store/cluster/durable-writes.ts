// Writes (docs/redis.md, "Writes and durability" and "Writes in a failover"). A turn's
// writes for one master go in one pipeline on ioredis's own connection to that master,
// never through its cluster routing, with one WAIT after them, for durability 'always',
// when that master has a replica: a group commit. ioredis's cluster routing would retry a
// pipeline lost with its master and send it to the promoted replica: a write the old master
// had run and passed on before it died ran twice (an increment counted twice), and WAITs
// each held the new master's connection for WAIT_MS. Here a lost connection fails its
// writes at once, and only writes that did not run are queued again.
import type { Cluster, Redis } from 'ioredis'
import { LRUCache } from 'lru-cache'
import { storeError, timedOut, unavailable } from './errors.js'
import type { LaneCall } from './read-lane.js'

/** How long a write waits for a replica before it is answered as unconfirmed. */
export const WAIT_MS = 1000
/** Answers that say a command did not run where it was sent: safe to send again elsewhere. */
const REDIRECT = /^(MOVED|TRYAGAIN|CLUSTERDOWN|LOADING|READONLY|MASTERDOWN) /
/** How long a write turned away waits before it is queued again (the slot table is reread meanwhile). */
const REQUEUE_MS = 200
/** Times a script is loaded on a master that lacked it and sent again, before it fails. */
const LOADS_MAX = 3
/** Times a write is queued again before it fails as unavailable: a second of a slot moving. */
const TURNS_MAX = 5
/** How long a master's count of replicas is trusted before it is asked again. */
const REPLICAS_TTL_MS = 1000
/** The slot table is read again at most this often on behalf of writes that went astray. */
const REFRESH_MS = 100
/** After a master did not answer in time, the slot table is read every second this long. */
const WATCH_MS = 10_000

/** A write script for a master, and where its answer goes. */
export interface Write extends LaneCall {
  /** The script's name, for loading it where it is missing. */
  readonly name: string | null
  /** Times it was sent again after a NOSCRIPT. */
  tries?: number
  /** Times it was turned away before it ran (REDIRECT) and queued again. */
  turned?: number
  /** The master a MOVED named ("host:port"): sent there next, whatever the slot table says. */
  to?: string
  /**
   * Answers a write that ran but whose WAIT no replica answered in time (else it is
   * rejected with `err`): a batch's writes that failed their own checks keep those answers.
   */
  unconfirmed?(value: unknown, err: Error): void
}

/**
 * A master's replicas in step, from its INFO replication; -1 if not a master; NaN if unsaid.
 * A replica still copying the master's data (state wait_bgsave or send_bulk: one that has
 * just come back, say a master woken after its failover) acknowledges no WAIT until the copy
 * is done, and cannot be promoted meanwhile: it is not counted, so writes are not refused
 * for as long as the copy takes.
 */
export function replicasIn(info: string): number {
  if (!/^role:master\r?$/m.test(info)) return /^role:/m.test(info) ? -1 : Number.NaN
  if (!/^connected_slaves:\d+\r?$/m.test(info)) return Number.NaN
  return (info.match(/^slave\d+:.*\bstate=online\b/gm) ?? []).length
}

/**
 * Calls a master answered NOSCRIPT, counted: those loaded and sent LOADS_MAX times already
 * fail; the rest are returned, to be sent again once their scripts are loaded.
 */
export function toLoad<T extends Write>(calls: T[]): T[] {
  for (const w of calls) w.tries = (w.tries ?? 0) + 1
  for (const w of calls) if (w.tries! > LOADS_MAX) w.reject(new Error('NOSCRIPT after loading'))
  return calls.filter((w) => w.tries! <= LOADS_MAX)
}

const noScript = (err: Error | null) => err?.message.startsWith('NOSCRIPT') === true

export class DurableWrites {
  private closed = false
  private refreshed = 0
  /** Each master's connected replicas, by "host:port", as it last said (INFO replication). */
  private replicas = new LRUCache<string, number>({ max: 1024, ttl: REPLICAS_TTL_MS })
  private asking = new Map<string, Promise<number>>()
  private timers = new Map<NodeJS.Timeout, Write[]>()

  constructor(
    private client: Cluster,
    /** Whether a write waits for a replica (durability 'always'). */
    private waits: boolean,
    /** The master of `key`'s slot as "host:port", as ioredis last saw the slot table. */
    private master: (key: string) => string | undefined,
    /** Queues writes again as if just asked (they join the turn's group for their master). */
    private again: (writes: Write[]) => void,
    /** A script's source, to load it on a master that answers NOSCRIPT. */
    private lua: (name: string) => string,
  ) {}

  /** Refuses what is still to be sent: writes turned away and waiting to be queued again. */
  close(): void {
    this.closed = true
    if (this.watching) clearInterval(this.watching)
    for (const [t, writes] of this.timers) {
      clearTimeout(t)
      this.fail(writes, unavailable('the store is closed'))
    }
    this.timers.clear()
    for (const w of this.writers.values()) w.conn.disconnect()
    this.writers.clear()
  }

  /**
   * Sends a turn's writes for one master. With a WAIT, one group at a time per master: WAIT
   * blocks its connection, so a group sent while another waits would only start waiting once
   * that one is done, and behind a stalled replica each would wait longer than the last.
   * Groups that come meanwhile are sent together next. Without one, each group goes at once:
   * one connection keeps them in order.
   */
  async send(group: Write[]): Promise<void> {
    const addr = this.closed ? undefined : (group[0]!.to ?? this.master(String(group[0]!.args[0])))
    if (addr === undefined || !this.waits) {
      await this.run(addr, group)
      return
    }
    const waiting = this.queued.get(addr)
    if (waiting !== undefined) {
      waiting.push(...group)
      return
    }
    this.queued.set(addr, [])
    let silent = false
    try {
      silent = await this.run(addr, group)
    } finally {
      const next = this.queued.get(addr)!
      this.queued.delete(addr)
      // Writes that waited behind a group the master never answered have not been sent: they
      // are queued again once the slot table is read, as writes turned away are (until the
      // cluster fails that master over, the table still names it).
      if (next.length > 0) silent ? this.later(next) : this.send(next)
    }
  }
  /** Writes waiting for their master's group under way, by master. */
  private queued = new Map<string, Write[]>()

  /** The count of replicas last heard from the master at `addr`, if still fresh; -1 if not a master. */
  known(addr: string): number | undefined {
    return this.replicas.get(addr)
  }

  /** Sends one group; true when the master did not answer it in time (timedOut). */
  private async run(addr: string | undefined, group: Write[]): Promise<boolean> {
    if (this.closed) {
      this.fail(group, unavailable('the store is closed'))
      return false
    }
    const pool = (this.client as any).connectionPool
    const node = addr === undefined ? undefined : (pool.getInstanceByKey(addr) as Redis | undefined)
    // No connection to the slot's master (it failed and ioredis dropped it, the slot is not
    // in the table, the table is being replaced): the table is read again and the writes
    // queued again, so a master that is gone fails them after TURNS_MAX tries.
    if (node === undefined || node.status === 'end' || (this.client.status as string) !== 'ready') {
      if (addr !== undefined) this.dropWriter(addr)
      this.later(group)
      return false
    }
    let replicas = 0
    try {
      // Without a WAIT, a node that is no longer a master says so itself (MOVED).
      if (this.waits) replicas = await this.replicasOf(addr!, node)
    } catch (err) {
      const silent = timedOut(err)
      if (silent) this.silent()
      else this.refresh()
      this.fail(group, err as Error)
      return silent
    }
    // Not a master any more: the slot table is behind. Queued again once it is read.
    if (replicas < 0) {
      this.later(group)
      return false
    }
    const wait = replicas > 0
    const writer = wait ? this.writerFor(addr!, node) : undefined
    const p = (writer?.conn ?? node).pipeline()
    // Scripts this connection has not run yet are loaded ahead of the calls, in the same
    // pipeline: a NOSCRIPT would cost the group a WAIT for nothing, then another.
    const loading = writer === undefined ? [] : [...new Set(group.map((w) => w.name))]
    const scriptsNew = loading.filter((n): n is string => n !== null && !writer!.loaded.has(n))
    for (const name of scriptsNew) p.script('LOAD', this.lua(name))
    for (const w of group)
      (p as any)[w.buffers ? 'evalshaBuffer' : 'evalsha'](w.sha, w.keys, ...w.args)
    // The node's replicas, asked right after the WAIT on the same connection, for a WAIT
    // that answers 0.
    if (wait) p.call('WAIT', '1', String(WAIT_MS)).info('replication')
    const all = ((await p.exec().catch(() => null)) ?? []) as [Error | null, unknown][]
    all.splice(0, scriptsNew.length).forEach(([err], i) => {
      if (err === null) writer!.loaded.add(scriptsNew[i]!)
    })
    while (all.length < group.length + (wait ? 2 : 0))
      all.push([unavailable('no answer from the master'), null])
    let res = all.slice(0, group.length)
    const [waited, info] = all.slice(group.length)

    // Any answer about reaching the cluster (not a script's own refusal): read the table again.
    if (
      all.some(
        ([err]) => err !== null && (storeError(err) as { code?: string }).code === 'IO_ERROR',
      )
    )
      this.refresh()
    const turned = group.filter((w, i) => {
      const message = res[i]![0]?.message ?? ''
      if (!REDIRECT.test(message)) return false
      // MOVED names the slot's master: the write goes there next, at once, without waiting
      // for the slot table to say so.
      w.to = /^MOVED \d+ (\S+)/.exec(message)?.[1]
      return true
    })
    if (turned.length > 0) {
      res = res.filter((_, i) => !turned.includes(group[i]!))
      group = group.filter((w) => !turned.includes(w))
      this.turnAway(turned)
    }

    let unconfirmed: Error | undefined
    if (wait && group.length > 0) {
      // A WAIT that failed says nothing. One that answered 0 is enough only if this node,
      // still a master, has no replica in step: then its AOF is all there is. Never
      // asked of another node: a new master would say 0 of writes it never had.
      const acked = waited![0] === null ? Number(waited![1]) : Number.NaN
      const now = info![0] === null ? replicasIn(String(info![1])) : Number.NaN
      if (!Number.isNaN(now)) this.replicas.set(addr!, now)
      if (!(acked >= 1 || (acked === 0 && now === 0)))
        unconfirmed = unavailable('the write was not acknowledged by a replica in time')
    }

    const unloaded = group.filter((_, i) => noScript(res[i]![0]))
    if (unloaded.length > 0) {
      writer?.loaded.clear()
      this.reload(writer?.conn ?? node, unloaded)
    }
    group.forEach((w, i) => {
      const [err, value] = res[i]!
      if (noScript(err)) return
      if (err) w.reject(err)
      else if (unconfirmed)
        w.unconfirmed ? w.unconfirmed(value, unconfirmed) : w.reject(unconfirmed)
      else w.resolve(value)
    })
    const silent = all.some(([err]) => timedOut(err))
    if (silent) this.silent()
    return silent
  }

  /**
   * Each master's connection for groups that end with a WAIT, beside ioredis's own: WAIT
   * blocks the connection it is sent on, and on ioredis's it held every other command to that
   * master (a token bucket's lease, a storage reservation) for up to WAIT_MS, so a PUT behind
   * a stalled replica waited a WAIT before its write was even queued. Like ioredis's node
   * connections it is never made again once closed, so nothing it sent is sent twice; the
   * next group makes a new one. `loaded`: the scripts run on it, so on its master.
   */
  private writers = new Map<string, { conn: Redis; loaded: Set<string> }>()

  private writerFor(addr: string, node: Redis): { conn: Redis; loaded: Set<string> } {
    const had = this.writers.get(addr)
    if (had !== undefined && had.conn.status !== 'end') return had
    const conn = node.duplicate({
      lazyConnect: false,
      enableOfflineQueue: true,
      enableAutoPipelining: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    })
    conn.on('error', () => {})
    const made = { conn, loaded: new Set<string>() }
    this.writers.set(addr, made)
    return made
  }

  /** Closes the write connection to a master ioredis no longer holds (failed over, gone). */
  private dropWriter(addr: string): void {
    this.writers.get(addr)?.conn.disconnect()
    this.writers.delete(addr)
  }

  /** `node`'s connected replicas, asked at most every REPLICAS_TTL_MS; -1 if not a master. */
  private replicasOf(addr: string, node: Redis): Promise<number> {
    const known = this.replicas.get(addr)
    return known !== undefined ? Promise.resolve(known) : this.asked(addr, node)
  }

  /** Asks `node` now (one question at a time per node), and remembers the answer. */
  private asked(addr: string, node: Redis): Promise<number> {
    let q = this.asking.get(addr)
    if (q === undefined) {
      q = node
        .info('replication')
        .then((info) => {
          const n = replicasIn(info)
          if (Number.isNaN(n)) throw unavailable('the master did not say its replicas')
          this.replicas.set(addr, n)
          return n
        })
        .finally(() => this.asking.delete(addr))
      this.asking.set(addr, q)
    }
    return q
  }

  /** Loads the scripts a master lacks, on that master, and sends those writes again. */
  private reload(node: Redis, writes: Write[]): void {
    const again = toLoad(writes)
    const p = node.pipeline()
    for (const name of new Set(again.map((w) => w.name!))) p.script('LOAD', this.lua(name))
    p.exec().then(
      (res) => {
        const failed = res?.find(([err]) => err)
        if (failed) this.fail(again, failed[0]!)
        else this.again(again)
      },
      (err) => this.fail(again, err as Error),
    )
  }

  /**
   * Writes that did not run: queued again, TURNS_MAX times at most; at once where a MOVED
   * named their master, else after REQUEUE_MS (the slot table is read meanwhile).
   */
  private turnAway(writes: Write[]): void {
    for (const w of writes) w.turned = (w.turned ?? 0) + 1
    this.fail(
      writes.filter((w) => w.turned! > TURNS_MAX),
      unavailable('the slot kept moving'),
    )
    const again = writes.filter((w) => w.turned! <= TURNS_MAX)
    for (const [list, ms] of [
      [again.filter((w) => w.to !== undefined), 0],
      [again.filter((w) => w.to === undefined), REQUEUE_MS],
    ] as const) {
      if (list.length === 0) continue
      const t = setTimeout(() => {
        this.timers.delete(t)
        this.again(list)
      }, ms)
      this.timers.set(t, list)
    }
  }

  /** Writes whose master is not where the slot table says: queued again once it is read. */
  private later(group: Write[]): void {
    this.refresh()
    for (const w of group) w.to = undefined
    this.turnAway(group)
  }

  /**
   * A master did not answer in time (connect.ts, ANSWER_MS): the slot table is read now and
   * every second until WATCH_MS after the last such silence. Nothing else would say when the
   * cluster has failed it over: no connection closes, and it sends no MOVED.
   */
  silent(): void {
    this.refresh()
    this.watchUntil = Date.now() + WATCH_MS
    if (this.watching !== null || this.closed) return
    this.watching = setInterval(() => {
      if (Date.now() < this.watchUntil) return this.refresh()
      clearInterval(this.watching!)
      this.watching = null
    }, 1000)
    this.watching.unref()
  }
  private watching: NodeJS.Timeout | null = null
  private watchUntil = 0

  /** Asks ioredis to read the slot table again, at most every REFRESH_MS. */
  private refresh(): void {
    const now = Date.now()
    if (this.closed || now - this.refreshed < REFRESH_MS) return
    this.refreshed = now
    this.client.refreshSlotsCache()
  }

  private fail(writes: Write[], err: Error): void {
    for (const w of writes) w.reject(err)
  }
}
