// Running the scripts, and how a write is made durable. Scripts go by EVALSHA; a node that
// answers NOSCRIPT (new, restarted, a promoted replica) is sent the source with SCRIPT LOAD
// and the scripts again. Scripts bound for one master in one turn of the event loop go in
// one pipeline, one write on the socket for every request of that turn. Durability: with durability
// 'always', the script and a WAIT for one replica go in one pipeline on the connection to the
// slot's master (appendfsync always has put it in that master's append-only file before the
// script's answer), and a write no replica took in time is refused as unconfirmed, unless the
// master has no replica at all (then its AOF is all there is).
import { createHash } from 'node:crypto'
import calculateSlot from 'cluster-key-slot'
import type { Cluster, Redis } from 'ioredis'
import { LRUCache } from 'lru-cache'
import type { Durability } from '../../../engine/types.js'
import * as E from './entry-scripts.js'
import type { RedisUrl } from './connect.js'
import { storeError } from './errors.js'
import { type LaneCall, ReadLane } from './read-lane.js'
import * as R from './record-scripts.js'
import type { ReadLaneStats } from '../types.js'

/** Keys whose slot is remembered (slot()): the most recently asked. */
const SLOTS_REMEMBERED = 10_000

/** How long a write waits for a replica before it is answered as unconfirmed. */
export const WAIT_MS = 1000

const SCRIPTS: Record<string, { keys: number; lua: string }> = {
  cairnPut: { keys: 1, lua: E.PUT },
  cairnDelete: { keys: 1, lua: E.DELETE },
  cairnBatch: { keys: 1, lua: E.BATCH },
  cairnGet: { keys: 1, lua: E.GET },
  cairnStat: { keys: 1, lua: E.STAT },
  cairnList: { keys: 1, lua: E.LIST },
  cairnCounts: { keys: 1, lua: E.COUNTS },
  cairnCreate: { keys: 2, lua: E.CREATE },
  cairnDrop: { keys: 1, lua: E.DROP },
  cairnSweep: { keys: 2, lua: E.SWEEP },
  cairnImport: { keys: 1, lua: E.IMPORT },
  cairnTransact: { keys: 1, lua: E.TRANSACT },
  cairnExpire: { keys: 1, lua: E.EXPIRE },
  cairnFeedRead: { keys: 1, lua: E.FEED_READ },
  cairnFeedVersion: { keys: 1, lua: E.FEED_VERSION },
  cairnRecPut: { keys: 2, lua: R.PUT },
  cairnRecCreate: { keys: 2, lua: R.CREATE },
  cairnRecDelete: { keys: 2, lua: R.DELETE },
  cairnRecBatch: { keys: 1, lua: R.BATCH },
  cairnRecList: { keys: 1, lua: R.LIST },
  cairnRecAdd: { keys: 2, lua: R.ADD },
  cairnBucket: { keys: 1, lua: R.BUCKET },
}

export type ScriptName = keyof typeof SCRIPTS

/**
 * Scripts that may take the read lane (read-lane.ts): those that only read, which the lane
 * may send again through ioredis when a connection is lost under them. Never one that
 * changes anything: not the token bucket (run twice, it would give a lease's tokens back
 * twice), not usage, not data.
 */
const LANE = new Set<ScriptName>([
  'cairnGet',
  'cairnStat',
  'cairnList',
  'cairnCounts',
  'cairnFeedRead',
  'cairnFeedVersion',
  'cairnRecList',
])

interface Pending extends LaneCall {
  /** The script, or null for a plain read command (`words`). */
  name: ScriptName | null
  args: (string | Buffer | number)[]
  /** Times it was sent again after a NOSCRIPT. */
  tries?: number
  /** Times a write was turned away before it ran (REDIRECT) and queued again. */
  turned?: number
}

const SHA: Record<string, string> = Object.fromEntries(
  Object.entries(SCRIPTS).map(([name, s]) => [
    name,
    createHash('sha1').update(s.lua).digest('hex'),
  ]),
)
/** Answers that say a command did not run where it was sent: safe to send again elsewhere. */
const REDIRECT = /^(MOVED|ASK|TRYAGAIN|CLUSTERDOWN|LOADING|READONLY|MASTERDOWN) /
/** How long a write turned away waits before it is queued again (the slot table is reread meanwhile). */
const REQUEUE_MS = 200
/** The slot table is read again at most this often on behalf of writes that went astray. */
const REFRESH_MS = 100
/** Times a write is queued again before it fails as unavailable: a second of a slot moving. */
const TURNS_MAX = 5
const noScript = (err: unknown) => String((err as Error)?.message).startsWith('NOSCRIPT')

export class Commands {
  private lane: ReadLane | null

  constructor(
    readonly client: Cluster,
    private durability: Durability,
    /** Where the read lane connects; without it every command goes through ioredis. */
    url?: RedisUrl,
  ) {
    this.lane = url
      ? new ReadLane(url, (calls) => this.send(calls as Pending[], false, true))
      : null
  }

  close(): void {
    this.lane?.close()
  }

  /** The read lane's counts, or undefined without one. */
  get laneStats(): ReadLaneStats | undefined {
    return this.lane?.stats
  }

  /**
   * Runs a script without waiting for replicas; `buffers` answers values as Buffers.
   * Scripts bound for one master in one turn of the event loop go out in one pipeline: one
   * write on the socket for all the requests uWebSockets.js handed over in that turn.
   */
  read(name: ScriptName, args: (string | Buffer | number)[], buffers = false): Promise<any> {
    return this.enqueue(name, args, buffers, false)
  }

  /**
   * Runs a plain command that only reads (HGET, HMGET) on the master of `key`'s slot, in the
   * same pipeline (or lane write) as the turn's scripts for that master, in the order asked.
   */
  readCommand(key: string, words: (string | Buffer | number)[], buffers = false): Promise<any> {
    return this.enqueue(null, [key], buffers, false, words)
  }

  /**
   * Runs a write script and resolves once it is as durable as the durability mode asks.
   * Writes bound for one master in the same turn of the event loop go in one pipeline with
   * one WAIT after them (WAIT blocks its connection, so one per write would queue every
   * later write behind it): a group commit, as the embedded engine does with fsync.
   */
  write(name: ScriptName, args: (string | Buffer | number)[], buffers = false): Promise<any> {
    return this.enqueue(name, args, buffers, this.waits(String(args[0])), undefined, true)
  }

  /** Whether a write to `key` waits for a replica (durability 'always', and the master has one). */
  waits(key: string): boolean {
    if (this.durability !== 'always') return false
    const owners = this.owners(key)
    // A master without replicas: its AOF, fsynced before the script answered, is all there is.
    return owners === undefined || owners.length > 1
  }

  /** The slot's owners as "host:port", master first, as the client last saw them. */
  owners(key: string): string[] | undefined {
    return (this.client as unknown as { slots: string[][] }).slots[this.slot(key)]
  }

  /**
   * A key's slot, remembered: a request asks it of the same few keys (a namespace's meta
   * hash, an account's bucket) two or three times, and each asking encodes and hashes them.
   */
  private slots = new LRUCache<string, number>({ max: SLOTS_REMEMBERED })

  private slot(key: string): number {
    let s = this.slots.get(key)
    if (s === undefined) {
      s = calculateSlot(key)
      this.slots.set(key, s)
    }
    return s
  }

  private enqueue(
    name: ScriptName | null,
    args: (string | Buffer | number)[],
    buffers: boolean,
    wait: boolean,
    words?: (string | Buffer | number)[],
    write = false,
  ): Promise<any> {
    const key = String(args[0])
    return new Promise((resolve, reject) => {
      this.join(this.groupOf(key, write, wait), wait, {
        name,
        sha: name === null ? '' : SHA[name]!,
        keys: name === null ? 0 : SCRIPTS[name]!.keys,
        args,
        words,
        buffers,
        resolve,
        reject: (err) => reject(storeError(err)),
      })
    })
  }

  /** Adds a call to the turn's group for `node`, committed on the next turn. */
  private join(node: string, wait: boolean, call: Pending): void {
    let group = this.groups.get(node)
    if (group === undefined) {
      group = []
      this.groups.set(node, group)
      setImmediate(() => this.commit(node, wait))
    }
    group.push(call)
  }

  private groups = new Map<string, Pending[]>()

  private commit(node: string, wait: boolean): void {
    const group = this.groups.get(node)!
    this.groups.delete(node)
    this.send(group, wait)
  }

  private async send(group: Pending[], wait: boolean, viaIoredis = false): Promise<void> {
    if (!wait && !viaIoredis && this.lane !== null) {
      // A turn's reads for one master take the lane; what may not (a bucket call beside
      // them) goes through ioredis as before.
      const laned = (w: Pending) => w.name === null || LANE.has(w.name)
      const reads = group.filter(laned)
      const addr = reads.length > 0 ? this.owners(String(reads[0]!.args[0]))?.[0] : undefined
      if (addr !== undefined && this.lane.send(addr, reads)) {
        if (reads.length === group.length) return
        group = group.filter((w) => !laned(w))
      }
    }
    // A write that waits for a replica goes on its master's own connection, not through
    // ioredis's cluster retries (docs/redis.md, "Writes in a failover").
    const node = wait ? this.master(String(group[0]!.args[0])) : undefined
    const p = node !== undefined ? node.pipeline() : (this.client as any).pipeline()
    for (const w of group) {
      if (w.name === null) p[w.buffers ? 'callBuffer' : 'call'](...w.words!)
      else p[w.buffers ? 'evalshaBuffer' : 'evalsha'](w.sha, w.keys, ...w.args)
    }
    if (wait) p.call('WAIT', '1', String(WAIT_MS))
    let res: [Error | null, unknown][]
    try {
      res = await p.exec()
    } catch (err) {
      // The slot moved between queueing and sending (a failover, a reshard): one at a time.
      if (group.length > 1 && /same slots allocation group/.test(String(err))) {
        for (const w of group) this.send([w], wait)
        return
      }
      for (const w of group) w.reject(err as Error)
      return
    }
    if (node !== undefined) {
      // Nothing here follows the cluster for these, so the slot table is read afresh after
      // any answer about reaching it (a lost connection fails its writes as unavailable).
      // Those turned away before they ran (the slot moved, the cluster is failing over) are
      // queued again, each with its own WAIT decided then.
      const turned: Pending[] = []
      let astray = false
      group.forEach((w, i) => {
        const err = res[i]![0]
        if (err === null || (storeError(err) as { code?: string }).code !== 'IO_ERROR') return
        astray = true
        if (!REDIRECT.test(err.message)) return
        w.turned = (w.turned ?? 0) + 1
        if (w.turned <= TURNS_MAX) turned.push(w)
      })
      if (astray) this.refresh()
      if (turned.length > 0) {
        const waited = res[group.length]!
        res = res.filter((_, i) => i < group.length && !turned.includes(group[i]!))
        res.push(waited)
        group = group.filter((w) => !turned.includes(w))
        setTimeout(() => this.requeue(turned), REQUEUE_MS)
        if (group.length === 0) return
      }
    }
    let unconfirmed: Error | undefined
    const acked = wait ? Number(res[group.length]?.[1] ?? 0) : 1
    if (acked < 1 && (await this.replicas(node, String(group[0]!.args[0])).catch(() => 1)) > 0) {
      unconfirmed = Object.assign(
        new Error('the write was not acknowledged by a replica in time'),
        {
          code: 'IO_ERROR',
        },
      )
    }
    const unloaded = group.filter((_, i) => noScript(res[i]![0]))
    if (unloaded.length > 0) {
      // Those did not run: load them on their node, then send them again (a few times
      // at most, should the slot keep moving).
      for (const w of unloaded) w.tries = (w.tries ?? 0) + 1
      const again = unloaded.filter((w) => w.tries! <= 3)
      for (const w of unloaded) if (w.tries! > 3) w.reject(new Error('NOSCRIPT after loading'))
      this.loadOn(
        String(unloaded[0]!.args[0]),
        unloaded.flatMap((w) => (w.name === null ? [] : [w.name])),
      ).then(
        () => {
          if (again.length > 0) this.send(again, wait)
        },
        (err) => {
          for (const w of again) w.reject(err as Error)
        },
      )
    }
    group.forEach((w, i) => {
      const [err, value] = res[i]!
      if (noScript(err)) return
      if (err) w.reject(err)
      else if (unconfirmed) w.reject(unconfirmed)
      else w.resolve(value)
    })
  }

  /** Loads scripts on the master of `key`'s slot (SCRIPT LOAD has no key to route by). */
  private async loadOn(key: string, names: ScriptName[]): Promise<void> {
    const p = (this.client as any).pipeline().exists(key)
    for (const name of new Set(names)) p.script('LOAD', SCRIPTS[name]!.lua)
    const res: [Error | null, unknown][] = await p.exec()
    const failed = res.find(([err]) => err)
    if (failed) throw failed[0]
  }

  /**
   * Replicas the node that ran the writes has connected now: asked of that node and never
   * another, since a new master would say 0 of writes it never had. Without a node (no slot
   * table yet), of the slot's master as ioredis routes.
   */
  private async replicas(node: Redis | undefined, key: string): Promise<number> {
    const info = node
      ? await node.info('replication')
      : (await (this.client as any).pipeline().exists(key).info('replication').exec())?.[1]?.[1]
    return Number(/connected_slaves:(\d+)/.exec(String(info ?? ''))?.[1] ?? 0)
  }

  /**
   * ioredis's connection to the master of `key`'s slot, made if it has none (it drops a
   * node's connection when it fails); undefined while the slot table has no such slot.
   */
  private master(key: string): Redis | undefined {
    const addr = this.owners(key)?.[0]
    if (addr === undefined) return undefined
    const pool = (this.client as any).connectionPool
    const at = addr.lastIndexOf(':')
    return (pool.getInstanceByKey(addr) ??
      pool.findOrCreate({ host: addr.slice(0, at), port: Number(addr.slice(at + 1)) })) as Redis
  }

  /** Asks ioredis to read the slot table again, at most every REFRESH_MS. */
  private refresh(): void {
    const now = Date.now()
    if (now - this.refreshed < REFRESH_MS) return
    this.refreshed = now
    this.client.refreshSlotsCache()
  }
  private refreshed = 0

  /** Writes turned away before they ran, queued again as if just asked. */
  private requeue(calls: Pending[]): void {
    for (const w of calls) {
      const key = String(w.args[0])
      const wait = this.waits(key)
      this.join(this.groupOf(key, true, wait), wait, w)
    }
  }

  /** The group a call joins: reads, writes, and writes that wait, apart, per master. */
  private groupOf(key: string, write: boolean, wait: boolean): string {
    return `${write ? (wait ? 'w' : 'x') : 'r'} ${this.owners(key)?.[0] ?? this.slot(key)}`
  }
}
