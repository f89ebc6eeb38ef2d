// Running the scripts. Scripts go by EVALSHA; a node that answers NOSCRIPT (new, restarted,
// a promoted replica) is sent the source with SCRIPT LOAD and the scripts again. Calls bound
// for one master in one turn of the event loop go out together: reads on the read lane
// (read-lane.ts), writes on ioredis's connection to that master, with one WAIT after them
// for durability 'always' (durable-writes.ts), the rest in one ioredis pipeline: one write
// on the socket for every request of that turn.
import { createHash } from 'node:crypto'
import calculateSlot from 'cluster-key-slot'
import type { Cluster } from 'ioredis'
import { LRUCache } from 'lru-cache'
import type { Durability } from '../../../engine/types.js'
import * as E from './entry-scripts.js'
import * as H from './history-scripts.js'
import type { RedisUrl } from './connect.js'
import { DurableWrites, type Write, toLoad } from './durable-writes.js'
import { storeError, timedOut } from './errors.js'
import { ReadLane } from './read-lane.js'
import * as R from './record-scripts.js'
import type { ReadLaneStats } from '../types.js'

/** Keys whose slot is remembered (slot()): the most recently asked. */
const SLOTS_REMEMBERED = 10_000

const SCRIPTS: Record<string, { keys: number; lua: string }> = {
  cairnPut: { keys: 1, lua: E.PUT },
  cairnWrites: { keys: 1, lua: E.WRITES },
  cairnDelete: { keys: 1, lua: E.DELETE },
  cairnGet: { keys: 1, lua: E.GET },
  cairnStat: { keys: 1, lua: E.STAT },
  cairnList: { keys: 1, lua: E.LIST },
  cairnCounts: { keys: 1, lua: E.COUNTS },
  cairnCountRange: { keys: 1, lua: E.COUNT_RANGE },
  cairnSnapOpen: { keys: 1, lua: E.SNAP_OPEN },
  cairnSnapRead: { keys: 1, lua: E.SNAP_READ },
  cairnSnapClose: { keys: 1, lua: E.SNAP_CLOSE },
  cairnCreate: { keys: 2, lua: E.CREATE },
  cairnDrop: { keys: 1, lua: E.DROP },
  cairnSweep: { keys: 2, lua: E.SWEEP },
  cairnImport: { keys: 1, lua: E.IMPORT },
  cairnTransact: { keys: 1, lua: E.TRANSACT },
  cairnExpire: { keys: 1, lua: E.EXPIRE },
  cairnFeedRead: { keys: 1, lua: E.FEED_READ },
  cairnFeedVersion: { keys: 1, lua: E.FEED_VERSION },
  cairnHistSet: { keys: 1, lua: H.HISTORY_SET },
  cairnHistSweep: { keys: 1, lua: H.HISTORY_SWEEP },
  cairnHistGet: { keys: 1, lua: H.HISTORY_GET },
  cairnHistList: { keys: 1, lua: H.HISTORY_LIST },
  cairnHistVersions: { keys: 1, lua: H.HISTORY_VERSIONS },
  cairnHistWindow: { keys: 1, lua: H.HISTORY_WINDOW },
  cairnRecPut: { keys: 2, lua: R.PUT },
  cairnRecCreate: { keys: 2, lua: R.CREATE },
  cairnRecDelete: { keys: 2, lua: R.DELETE },
  cairnRecBatch: { keys: 1, lua: R.BATCH },
  cairnRecList: { keys: 1, lua: R.LIST },
  cairnRecAdd: { keys: 3, lua: R.ADD },
  cairnBucket: { keys: 2, lua: R.BUCKET },
  cairnHold: { keys: 1, lua: R.HOLD },
  cairnRenew: { keys: 1, lua: R.RENEW },
  cairnUnhold: { keys: 1, lua: R.UNHOLD },
  cairnReserve: { keys: 1, lua: R.RESERVE },
  cairnBase: { keys: 1, lua: R.BASE },
  cairnSettle: { keys: 1, lua: R.SETTLE },
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
  'cairnCountRange',
  'cairnFeedRead',
  'cairnFeedVersion',
  'cairnRecList',
  'cairnHistGet',
  'cairnHistList',
  'cairnHistVersions',
  'cairnHistWindow',
])

interface Pending extends Write {
  /** The script, or null for a plain read command (`words`). */
  name: ScriptName | null
  args: (string | Buffer | number)[]
}

const SHA: Record<string, string> = Object.fromEntries(
  Object.entries(SCRIPTS).map(([name, s]) => [
    name,
    createHash('sha1').update(s.lua).digest('hex'),
  ]),
)
const noScript = (err: unknown) => String((err as Error)?.message).startsWith('NOSCRIPT')

/** A call for a group, and the promise its answer settles (errors as the store's). */
function pending(
  name: ScriptName | null,
  args: (string | Buffer | number)[],
  buffers: boolean,
  words?: (string | Buffer | number)[],
): { call: Pending; answer: Promise<any> } {
  let call: Pending | undefined
  const answer = new Promise<any>((resolve, reject) => {
    call = {
      name,
      sha: name === null ? '' : SHA[name]!,
      keys: name === null ? 0 : SCRIPTS[name]!.keys,
      args,
      words,
      buffers,
      resolve,
      reject: (err) => reject(storeError(err)),
    }
  })
  return { call: call!, answer }
}

/** The writes a batch of one namespace takes, by script, and the tag each has in WRITES. */
const BATCHED: Partial<Record<ScriptName, string>> = { cairnPut: 'p', cairnDelete: 'd' }

/**
 * A turn's writes for one master with the PUTs and DELETEs to each namespace made one WRITES
 * call (at the place of the first): one script call, one meta read and one feed wake-up for
 * all of them, applied in the order they came. A write joins its namespace's batch only
 * while no other write to that namespace (a transaction, say) came after the batch began,
 * so every namespace's writes still run in the order asked.
 */
export function coalesced(group: Pending[]): Pending[] {
  const out: Pending[] = []
  const batches: { at: number; parts: Pending[] }[] = []
  const open = new Map<string, { at: number; parts: Pending[] }>()
  for (const w of group) {
    const ns = String(w.args[0])
    if (w.name === null || BATCHED[w.name] === undefined) {
      open.delete(ns)
      out.push(w)
      continue
    }
    const b = open.get(ns)
    if (b !== undefined) {
      b.parts.push(w)
      continue
    }
    const started = { at: out.length, parts: [w] }
    open.set(ns, started)
    batches.push(started)
    out.push(w)
  }
  for (const { at, parts } of batches) if (parts.length > 1) out[at] = batchOf(parts)
  return out
}

/** One WRITES call for `parts` (PUTs and DELETEs to one namespace): each answered on its own. */
function batchOf(parts: Pending[]): Pending {
  const answer = (results: unknown) => {
    const each = Array.isArray(results) ? results : []
    parts.forEach((p, i) => {
      const r = each[i]
      if (r instanceof Error) p.reject(r)
      else if (r === undefined) p.reject(new Error('no answer for this write in its batch'))
      else p.resolve(r)
    })
  }
  const args: (string | Buffer | number)[] = [parts[0]!.args[0]!]
  let turned = 0
  for (const p of parts) {
    args.push(BATCHED[p.name!]!)
    for (let i = 1; i < p.args.length; i++) args.push(p.args[i]!)
    turned = Math.max(turned, p.turned ?? 0)
  }
  return {
    name: 'cairnWrites',
    sha: SHA.cairnWrites!,
    keys: 1,
    args,
    buffers: false,
    to: parts[0]!.to,
    turned,
    resolve: answer,
    // A write whose own check failed keeps its own answer when the batch's WAIT failed:
    // a conflict is a conflict whether or not a replica has the others.
    unconfirmed(results, err) {
      const each = Array.isArray(results) ? results : []
      parts.forEach((p, i) => {
        p.reject(each[i] instanceof Error ? each[i] : err)
      })
    },
    reject(err) {
      for (const p of parts) p.reject(err)
    },
  }
}

export class Commands {
  private lane: ReadLane | null

  constructor(
    readonly client: Cluster,
    private durability: Durability,
    /** Where the read lane connects; without it every command goes through ioredis. */
    url?: RedisUrl,
  ) {
    this.lane = url ? new ReadLane(url, (calls) => this.send(calls as Pending[], true)) : null
    this.durable = new DurableWrites(
      client,
      durability === 'always',
      (key) => this.owners(key)?.[0],
      (writes) => {
        for (const w of writes)
          this.join(w.to ? `w ${w.to}` : this.groupOf(String(w.args[0]), true), w as Pending)
      },
      (name) => SCRIPTS[name]!.lua,
    )
  }

  private durable: DurableWrites

  close(): void {
    this.lane?.close()
    this.durable.close()
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
    return this.enqueue(name, args, buffers)
  }

  /**
   * Runs a plain command that only reads (HGET, HMGET) on the master of `key`'s slot, in the
   * same pipeline (or lane write) as the turn's scripts for that master, in the order asked.
   */
  readCommand(key: string, words: (string | Buffer | number)[], buffers = false): Promise<any> {
    return this.enqueue(null, [key], buffers, words)
  }

  /**
   * Runs a plain read command after every other call of the turn's group for `key`'s master,
   * once however many ask the same words in that turn. A GET's check that its namespace's
   * generation still stands (entries.ts) holds for every entry read before it, so the GETs
   * of one turn share one.
   */
  readAfter(key: string, words: (string | Buffer | number)[]): Promise<any> {
    const node = this.groupOf(key, false)
    if (!this.groups.has(node)) this.join(node, null)
    let tail = this.tails.get(node)
    if (tail === undefined) {
      tail = new Map()
      this.tails.set(node, tail)
    }
    const id = words.join(' ')
    let asked = tail.get(id)
    if (asked === undefined) {
      asked = pending(null, [key], false, words)
      tail.set(id, asked)
    }
    return asked.answer
  }

  /** The calls readAfter adds at the end of each group, by group and words. */
  private tails = new Map<string, Map<string, { call: Pending; answer: Promise<any> }>>()

  /**
   * Runs a write script and resolves once it is as durable as the durability mode asks.
   * Writes bound for one master in the same turn of the event loop go in one pipeline with
   * one WAIT after them (WAIT blocks its connection, so one per write would queue every
   * later write behind it): a group commit, as the embedded engine does with fsync.
   */
  write(name: ScriptName, args: (string | Buffer | number)[], buffers = false): Promise<any> {
    return this.enqueue(name, args, buffers, undefined, true)
  }

  /**
   * Whether the feed waits for a replica before it delivers a change: durability 'always',
   * and the master has one (as it last told a write, else as the slot table shows).
   */
  waits(key: string): boolean {
    if (this.durability !== 'always') return false
    const owners = this.owners(key)
    const known = owners === undefined ? undefined : this.durable.known(owners[0]!)
    // As the master last said to a write (the slot table can hold a master alone for a
    // moment after a MOVED), else as the slot table has it.
    if (known !== undefined) return known > 0
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
    words?: (string | Buffer | number)[],
    write = false,
  ): Promise<any> {
    const { call, answer } = pending(name, args, buffers, words)
    this.join(this.groupOf(String(args[0]), write), call)
    return answer
  }

  /** Adds a call (null: none, the group only) to the turn's group for `node`, sent next turn. */
  private join(node: string, call: Pending | null): void {
    let group = this.groups.get(node)
    if (group === undefined) {
      group = []
      this.groups.set(node, group)
      setImmediate(() => this.commit(node))
    }
    if (call !== null) group.push(call)
  }

  private groups = new Map<string, Pending[]>()

  private commit(node: string): void {
    const group = this.groups.get(node)!
    this.groups.delete(node)
    const tail = this.tails.get(node)
    if (tail !== undefined) {
      this.tails.delete(node)
      for (const { call } of tail.values()) group.push(call)
    }
    if (node[0] === 'w') this.durable.send(coalesced(group))
    else this.send(group)
  }

  /**
   * The group a call joins, per master: reads ('r'), writes ('w', on the master's connection,
   * with a WAIT when the durability is 'always': durable-writes.ts).
   */
  private groupOf(key: string, write: boolean): string {
    return `${write ? 'w' : 'r'} ${this.owners(key)?.[0] ?? this.slot(key)}`
  }

  /** Sends reads through ioredis, those that may take the read lane by the lane first. */
  private async send(group: Pending[], viaIoredis = false): Promise<void> {
    if (!viaIoredis && this.lane !== null) {
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
    // Plain reads (a GET's HMGET and HGET) go one command each, in order, never in a pipeline
    // (connect.ts keeps them out of auto-pipelining): ioredis answers an ASK that every failed
    // call of a pipeline shares by sending the whole pipeline again to the slot's new master,
    // the reads that had found their entry too, and a GET would say not found during a slot
    // migration (docs/redis.md, "Reading an entry").
    const plain = group.filter((w) => w.name === null)
    for (const w of plain) {
      const [name, ...rest] = w.words!
      const command = `${String(name).toLowerCase()}${w.buffers ? 'Buffer' : ''}`
      ;(this.client as any)[command](...rest).then(w.resolve, (err: Error) => {
        if (timedOut(err)) this.durable.silent()
        w.reject(err)
      })
    }
    if (plain.length === group.length) return
    if (plain.length > 0) group = group.filter((w) => w.name !== null)
    const p = (this.client as any).pipeline()
    for (const w of group) p[w.buffers ? 'evalshaBuffer' : 'evalsha'](w.sha, w.keys, ...w.args)
    let res: [Error | null, unknown][]
    try {
      res = await p.exec()
    } catch (err) {
      // The slot moved between queueing and sending (a failover, a reshard): one at a time.
      if (group.length > 1 && /same slots allocation group/.test(String(err))) {
        for (const w of group) this.send([w], viaIoredis)
        return
      }
      for (const w of group) w.reject(err as Error)
      return
    }
    // A master that did not answer in time may be gone while its connection stays: the slot
    // table is read again, so that a replica promoted in its place takes what comes next.
    if (res.some(([err]) => timedOut(err))) this.durable.silent()
    const unloaded = group.filter((_, i) => noScript(res[i]![0]))
    if (unloaded.length > 0) {
      // Those did not run: load them on their node, then send them again (a few times
      // at most, should the slot keep moving).
      const again = toLoad(unloaded)
      this.loadOn(
        String(unloaded[0]!.args[0]),
        unloaded.flatMap((w) => (w.name === null ? [] : [w.name])),
      ).then(
        () => {
          if (again.length > 0) this.send(again, viaIoredis)
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
}
