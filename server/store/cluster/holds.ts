// What an account holds at once (its open watches), counted in Redis so that every front end
// counts against one limit: a sorted set per group, `c:{<group>}:holds`, of holders by the
// time each hold lapses (record-scripts.ts HOLD). A front end renews the holds it has every
// RENEW_MS; one that dies stops renewing and its holds lapse within HOLD_MS. Layout and
// rules: docs/redis.md, "Holds".
import type { Holds } from '../types.js'
import type { Commands } from './commands.js'

/** How long a hold lasts without renewal: how soon a dead front end's watches stop counting. */
export const HOLD_MS = 30_000
const RENEW_MS = 10_000

const keyOf = (group: string) => `c:{${group}}:holds`

export class ClusterHolds implements Holds {
  /** The holders this front end has, by group: what it renews. */
  private held = new Map<string, Set<string>>()
  private timer: NodeJS.Timeout

  constructor(private cmd: Commands) {
    this.timer = setInterval(() => this.renew(), RENEW_MS)
    this.timer.unref()
  }

  async take(group: string, holder: string, max: number): Promise<boolean> {
    const got = Number(await this.cmd.read('cairnHold', [keyOf(group), holder, max, HOLD_MS]))
    if (got !== 1) return false
    let set = this.held.get(group)
    if (set === undefined) {
      set = new Set()
      this.held.set(group, set)
    }
    set.add(holder)
    return true
  }

  release(group: string, holder: string): void {
    const set = this.held.get(group)
    if (set === undefined || !set.delete(holder)) return
    if (set.size === 0) this.held.delete(group)
    this.cmd.read('cairnUnhold', [keyOf(group), holder]).catch(() => {})
  }

  private renew(): void {
    for (const [group, set] of this.held)
      this.cmd.read('cairnRenew', [keyOf(group), HOLD_MS, ...set]).catch(() => {})
  }

  close(): void {
    clearInterval(this.timer)
  }
}
