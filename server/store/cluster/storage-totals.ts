// An account's storage total on Redis, for the quota, with the writes under way reserved
// beside it: `c:{q:<account>}:storage` (record-scripts.ts RESERVE, BASE, SETTLE). Every
// front end checks a write against the same total, so writes through many front ends at
// once pass the quota by no more than one write. Rules: docs/redis.md, "Storage totals".
import type { StorageTotals } from '../types.js'
import type { Commands } from './commands.js'

/** How long a reservation lasts if its write never settles (a front end that died). */
const RESERVED_MS = 30_000

const keyOf = (id: string) => `c:{q:${id}}:storage`

export class ClusterStorageTotals implements StorageTotals {
  constructor(private cmd: Commands) {}

  async reserve(
    id: string,
    holder: string,
    delta: number,
    max: number,
  ): Promise<'ok' | 'over' | 'unknown'> {
    const [got] = (await this.cmd.read('cairnReserve', [
      keyOf(id),
      holder,
      Math.ceil(delta),
      max,
      RESERVED_MS,
    ])) as number[]
    return got === 1 ? 'ok' : got === 0 ? 'over' : 'unknown'
  }

  async base(id: string, bytes: number, replace: boolean): Promise<boolean> {
    return (await this.cmd.read('cairnBase', [keyOf(id), bytes, replace ? 1 : 0])) === 1
  }

  settle(id: string, holder: string, delta: number): void {
    this.cmd.read('cairnSettle', [keyOf(id), holder, Math.ceil(delta)]).catch(() => {})
  }
}
