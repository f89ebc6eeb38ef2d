// Running the scripts, and how a write is made durable. Scripts go by EVALSHA, with EVAL
// (the source) only when a node answers NOSCRIPT (a new node, a promoted replica, a
// restart): ioredis's own script commands resend the whole source in every pipeline and
// auto-pipeline, which on small requests costs more than the request. Durability: with durability
// 'always', the script and a WAIT for one replica go in one pipeline to the slot's master
// (appendfsync always has put it in that master's append-only file before the script's
// answer), and a write no replica took in time is refused as unconfirmed, unless the master
// has no replica at all (then its AOF is all there is).
import { createHash } from 'node:crypto'
import calculateSlot from 'cluster-key-slot'
import type { Cluster } from 'ioredis'
import type { Durability } from '../../../engine/types.js'
import * as E from './entry-scripts.js'
import { storeError } from './errors.js'
import * as R from './record-scripts.js'

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
  cairnRecPut: { keys: 2, lua: R.PUT },
  cairnRecCreate: { keys: 2, lua: R.CREATE },
  cairnRecDelete: { keys: 2, lua: R.DELETE },
  cairnRecBatch: { keys: 1, lua: R.BATCH },
  cairnRecList: { keys: 1, lua: R.LIST },
  cairnRecAdd: { keys: 2, lua: R.ADD },
  cairnBucket: { keys: 1, lua: R.BUCKET },
}

export type ScriptName = keyof typeof SCRIPTS

interface Pending {
  name: ScriptName
  args: (string | Buffer | number)[]
  resolve(value: unknown): void
  reject(err: Error): void
  /** Times it was sent again after a NOSCRIPT. */
  tries?: number
}

const SHA: Record<string, string> = Object.fromEntries(
  Object.entries(SCRIPTS).map(([name, s]) => [
    name,
    createHash('sha1').update(s.lua).digest('hex'),
  ]),
)
const noScript = (err: unknown) => String((err as Error)?.message).startsWith('NOSCRIPT')

export class Commands {
  constructor(
    readonly client: Cluster,
    private durability: Durability,
  ) {}

  /** Runs a script without waiting for replicas; `buffers` answers values as Buffers. */
  read(name: ScriptName, args: (string | Buffer | number)[], buffers = false): Promise<any> {
    const c = this.client as any
    const s = SCRIPTS[name]!
    return c[buffers ? 'evalshaBuffer' : 'evalsha'](SHA[name], s.keys, ...args).catch(
      (err: unknown) => {
        // The script did not run: send its source once, which also loads it on that node.
        if (!noScript(err)) throw storeError(err)
        return c[buffers ? 'evalBuffer' : 'eval'](s.lua, s.keys, ...args).catch((e: unknown) => {
          throw storeError(e)
        })
      },
    )
  }

  /**
   * Runs a write script and resolves once it is as durable as the durability mode asks.
   * Writes bound for one master in the same turn of the event loop go in one pipeline with
   * one WAIT after them (WAIT blocks its connection, so one per write would queue every
   * later write behind it): a group commit, as the embedded engine does with fsync.
   */
  write(name: ScriptName, args: (string | Buffer | number)[]): Promise<any> {
    if (this.durability !== 'always') return this.read(name, args)
    const slot = calculateSlot(String(args[0]))
    const owners = (this.client as unknown as { slots: string[][] }).slots[slot]
    // A master without replicas: its AOF, fsynced before the script answered, is all there is.
    if (owners !== undefined && owners.length < 2) return this.read(name, args)
    const node = owners?.[0] ?? `slot:${slot}`
    return new Promise((resolve, reject) => {
      let group = this.groups.get(node)
      if (group === undefined) {
        group = []
        this.groups.set(node, group)
        setImmediate(() => this.commit(node))
      }
      group.push({ name, args, resolve, reject })
    })
  }

  private groups = new Map<string, Pending[]>()

  private commit(node: string): void {
    const group = this.groups.get(node)!
    this.groups.delete(node)
    this.send(group)
  }

  private async send(group: Pending[]): Promise<void> {
    const p = (this.client as any).pipeline()
    for (const w of group) p.evalsha(SHA[w.name], SCRIPTS[w.name]!.keys, ...w.args)
    p.call('WAIT', '1', String(WAIT_MS))
    let res: [Error | null, unknown][]
    try {
      res = await p.exec()
    } catch (err) {
      // The slot moved between queueing and sending (a failover, a reshard): one at a time.
      if (group.length > 1 && /same slots allocation group/.test(String(err))) {
        for (const w of group) this.send([w])
        return
      }
      for (const w of group) w.reject(storeError(err))
      return
    }
    let unconfirmed: Error | undefined
    const acked = Number(res[group.length]?.[1] ?? 0)
    if (acked < 1 && (await this.replicas(String(group[0]!.args[0])).catch(() => 1)) > 0) {
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
      const again = unloaded.filter((w) => (w.tries = (w.tries ?? 0) + 1) <= 3)
      for (const w of unloaded)
        if (!again.includes(w)) w.reject(storeError(new Error('NOSCRIPT after loading')))
      this.loadOn(
        String(unloaded[0]!.args[0]),
        unloaded.map((w) => w.name),
      ).then(
        () => {
          if (again.length > 0) this.send(again)
        },
        (err) => {
          for (const w of again) w.reject(storeError(err))
        },
      )
    }
    group.forEach((w, i) => {
      const [err, value] = res[i]!
      if (noScript(err)) return
      if (err) w.reject(storeError(err))
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

  /** Replicas the master of `key`'s slot has connected now. */
  private async replicas(key: string): Promise<number> {
    try {
      const res = await (this.client as any).pipeline().exists(key).info('replication').exec()
      const info = String(res?.[1]?.[1] ?? '')
      return Number(/connected_slaves:(\d+)/.exec(info)?.[1] ?? 0)
    } catch (err) {
      throw storeError(err)
    }
  }
}
