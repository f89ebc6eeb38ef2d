// Usage: per account and UTC day, requests by operation, errors, 429s and bytes. Counting is
// a few additions on the account's in-memory counters; a timer writes the changed ones to
// sys/usage every couple of seconds and at shutdown, so a crash loses at most that interval.
import type { Engine } from '../engine/types.js'
import type { Account, Accounts } from './accounts.js'
import { SYS } from './system.js'

export const OPS = ['get', 'put', 'delete', 'list', 'namespace', 'usage'] as const
export type OpName = (typeof OPS)[number]
export const OP = { get: 0, put: 1, delete: 2, list: 3, namespace: 4, usage: 5 } as const

const DAY_MS = 86_400_000
/** Days of records kept; older ones are removed when the day turns. */
const KEEP_DAYS = 90

export interface DayUsage {
  date: string
  requests: number
  operations: Record<OpName, number>
  errors: number
  rateLimited: number
  bytesIn: number
  bytesOut: number
  /** The account's stored bytes when the day's counters were last written. */
  storageBytes?: number
}

/** One account's counters for one day, as kept in memory. */
export class DayCounters {
  ops = [0, 0, 0, 0, 0, 0]
  errors = 0
  rateLimited = 0
  bytesIn = 0
  bytesOut = 0
  storageBytes = 0
  dirty = false

  constructor(
    readonly accountId: string,
    readonly day: number,
  ) {}

  get requests(): number {
    let n = 0
    for (const v of this.ops) n += v
    return n
  }

  toDay(): DayUsage {
    const operations = {} as Record<OpName, number>
    OPS.forEach((op, i) => {
      operations[op] = this.ops[i]!
    })
    return {
      date: dateOf(this.day),
      requests: this.requests,
      operations,
      errors: this.errors,
      rateLimited: this.rateLimited,
      bytesIn: this.bytesIn,
      bytesOut: this.bytesOut,
      storageBytes: this.storageBytes,
    }
  }

  static from(accountId: string, day: number, d: Partial<DayUsage>): DayCounters {
    const c = new DayCounters(accountId, day)
    OPS.forEach((op, i) => {
      c.ops[i] = Number(d.operations?.[op] ?? 0)
    })
    c.errors = Number(d.errors ?? 0)
    c.rateLimited = Number(d.rateLimited ?? 0)
    c.bytesIn = Number(d.bytesIn ?? 0)
    c.bytesOut = Number(d.bytesOut ?? 0)
    c.storageBytes = Number(d.storageBytes ?? 0)
    return c
  }
}

export const dayOf = (ms: number) => Math.floor(ms / DAY_MS)
export const dateOf = (day: number) => new Date(day * DAY_MS).toISOString().slice(0, 10)
const recordKey = (accountId: string, day: number) => `${accountId}/${dateOf(day)}`

export function emptyDay(day: number): DayUsage {
  return new DayCounters('', day).toDay()
}

export class Usage {
  private dirty: DayCounters[] = []
  private flushing: Promise<void> | null = null
  private prunedDay = 0

  constructor(
    private engine: Engine,
    private accounts: Accounts,
    private storageOf: (a: Account) => number,
  ) {}

  /** Today's counters of every account, so the daily quota holds across a restart. */
  async load(): Promise<void> {
    const today = dayOf(Date.now())
    this.prunedDay = today
    for (const a of this.accounts.all()) {
      const got = await this.engine.get(SYS.usage, recordKey(a.id, today))
      if (got) a.usage = DayCounters.from(a.id, today, got.value as DayUsage)
    }
  }

  /** The account's counters for the current UTC day (a new day starts from zero). */
  today(a: Account, now: number): DayCounters {
    const day = dayOf(now)
    let c = a.usage
    if (c === undefined || c.day !== day) {
      c = new DayCounters(a.id, day)
      a.usage = c
    }
    return c
  }

  /** Counts one answered request. 429s count apart, not as requests of their operation. */
  record(
    a: Account,
    op: number,
    status: number,
    bytesIn: number,
    bytesOut: number,
    now: number,
  ): void {
    const c = this.today(a, now)
    if (status === 429) c.rateLimited++
    else {
      c.ops[op]!++
      if (status >= 400) c.errors++
    }
    c.bytesIn += bytesIn
    c.bytesOut += bytesOut
    if (!c.dirty) {
      c.dirty = true
      this.dirty.push(c)
    }
  }

  /** Writes every changed day record; concurrent calls share one pass. */
  flush(): Promise<void> {
    if (this.flushing) return this.flushing.then(() => this.flush())
    this.flushing = this.writeDirty().finally(() => {
      this.flushing = null
    })
    return this.flushing
  }

  private async writeDirty(): Promise<void> {
    const batch = this.dirty
    this.dirty = []
    const ops = []
    for (const c of batch) {
      c.dirty = false
      const a = this.accounts.get(c.accountId)
      if (!a || a.deleted) continue
      c.storageBytes = this.storageOf(a)
      ops.push({
        type: 'put' as const,
        ns: SYS.usage,
        key: recordKey(c.accountId, c.day),
        value: c.toDay(),
      })
    }
    if (ops.length > 0) {
      try {
        await this.engine.batch(ops)
      } catch (err) {
        // A full or failing disk: keep the counters to write on a later pass rather than
        // lose them (a batch that failed left nothing behind).
        for (const c of batch) {
          if (c.dirty) continue
          c.dirty = true
          this.dirty.push(c)
        }
        throw err
      }
    }
    await this.prune()
  }

  /** Once a day, removes records that fell out of the kept window. */
  private async prune(): Promise<void> {
    const today = dayOf(Date.now())
    if (today === this.prunedDay) return
    this.prunedDay = today
    const cutoff = `${dateOf(today - KEEP_DAYS)}`
    for (const a of this.accounts.all()) {
      const page = await this.engine.list(SYS.usage, { prefix: `${a.id}/`, limit: 100 })
      for (const key of page.keys) {
        if (key.slice(a.id.length + 1) < cutoff) await this.engine.delete(SYS.usage, key)
      }
    }
  }

  /** The last `days` days, oldest first, today last (from memory, the rest from storage). */
  async days(a: Account, days: number): Promise<DayUsage[]> {
    const today = dayOf(Date.now())
    const out: DayUsage[] = []
    for (let d = today - days + 1; d <= today; d++) {
      if (d === today) {
        const c = this.today(a, Date.now())
        const day = c.toDay()
        day.storageBytes = this.storageOf(a)
        out.push(day)
        continue
      }
      const got = await this.engine.get(SYS.usage, recordKey(a.id, d))
      out.push(got ? DayCounters.from(a.id, d, got.value as DayUsage).toDay() : emptyDay(d))
    }
    return out
  }

  async forget(a: Account): Promise<void> {
    for (;;) {
      const page = await this.engine.list(SYS.usage, { prefix: `${a.id}/`, limit: 1000 })
      if (page.keys.length === 0) return
      await this.engine.batch(
        page.keys.map((key) => ({ type: 'delete' as const, ns: SYS.usage, key })),
      )
    }
  }
}
