// The scripts registered on the client, and how a write is made durable: with durability
// 'always', the script and a WAIT for one replica go in one pipeline to the slot's master
// (appendfsync always has put it in that master's append-only file before the script's
// answer), and a write no replica took in time is refused as unconfirmed, unless the master
// has no replica at all (then its AOF is all there is).
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
  cairnRecPut: { keys: 2, lua: R.PUT },
  cairnRecCreate: { keys: 2, lua: R.CREATE },
  cairnRecDelete: { keys: 2, lua: R.DELETE },
  cairnRecBatch: { keys: 1, lua: R.BATCH },
  cairnRecList: { keys: 1, lua: R.LIST },
  cairnRecAdd: { keys: 2, lua: R.ADD },
  cairnBucket: { keys: 1, lua: R.BUCKET },
}

export type ScriptName = keyof typeof SCRIPTS

export class Commands {
  constructor(
    readonly client: Cluster,
    private durability: Durability,
  ) {
    for (const [name, s] of Object.entries(SCRIPTS))
      client.defineCommand(name, { numberOfKeys: s.keys, lua: s.lua })
  }

  /** Runs a read-only script; `buffers` answers values as Buffers. */
  async read(name: ScriptName, args: (string | Buffer | number)[], buffers = false): Promise<any> {
    const c = this.client as any
    try {
      return await c[buffers ? `${name}Buffer` : name](...args)
    } catch (err) {
      throw storeError(err)
    }
  }

  /** Runs a write script and resolves once it is as durable as the durability mode asks. */
  async write(name: ScriptName, args: (string | Buffer | number)[]): Promise<any> {
    if (this.durability !== 'always') return this.read(name, args)
    const p = (this.client as any).pipeline()
    p[name](...args)
    p.call('WAIT', '1', String(WAIT_MS))
    let res: [Error | null, unknown][]
    try {
      res = await p.exec()
    } catch (err) {
      throw storeError(err)
    }
    const [err, value] = res[0]!
    if (err) throw storeError(err)
    const acked = Number(res[1]?.[1] ?? 0)
    if (acked < 1 && (await this.replicas(String(args[0]))) > 0) {
      throw Object.assign(new Error('the write was not acknowledged by a replica in time'), {
        code: 'IO_ERROR',
      })
    }
    return value
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
