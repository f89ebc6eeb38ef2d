// Usage: per account and UTC day, requests by operation, errors, 429s and bytes. Counting is
// a few additions on this front end's counters; a timer adds what was counted since the last
// pass to the day's record in the store every couple of seconds and at shutdown, and reads
// back the record's totals, so several front ends on one store count into one total and the
// daily quota sees all of them (within a pass). A crash loses at most one interval's counts.
// Each pass's addition carries a token of its own; one whose answer was lost is sent again
// as it was, under the same token, and the store makes it once (types.ts, Records.add).
import { randomBytes } from 'node:crypto'
import type { Account, Accounts } from './accounts.js'
import type { Store } from '../store/types.js'

export const OPS = [
  'get',
  'put',
  'delete',
  'list',
  'namespace',
  'usage',
  'patch',
  'transaction',
  'deletePrefix',
  'watch',
  'export',
  'import',
] as const
export type OpName = (typeof OPS)[number]
export const OP = {
  get: 0,
  put: 1,
  delete: 2,
  list: 3,
  namespace: 4,
  usage: 5,
  patch: 6,
  transaction: 7,
  deletePrefix: 8,
  watch: 9,
  export: 10,
  import: 11,
} as const

/**
 * A day record's fields, in the order the counters hold them. Watch events delivered are
 * counted apart from requests (they are not requests: no rate limit, no daily quota).
 */
const FIELDS = [...OPS, 'errors', 'rateLimited', 'bytesIn', 'bytesOut', 'watchEvents'] as const
const ERRORS = OPS.length
const RATE_LIMITED = ERRORS + 1
const BYTES_IN = ERRORS + 2
const BYTES_OUT = ERRORS + 3
const WATCH_EVENTS = ERRORS + 4

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
  /** Events delivered to the account's watches (not requests). */
  watchEvents: number
  /** The account's stored bytes when the day's counters were last written. */
  storageBytes?: number
}

type DayRecord = Partial<Record<(typeof FIELDS)[number] | 'storageBytes', number>>

/** One account's counters for one day: the store's totals as last read, plus what is new here. */
export class DayCounters {
  /** Totals: the store's as of the last pass plus `pending` (and `unconfirmed`). */
  readonly total = new Float64Array(FIELDS.length)
  /** Counted here since the last pass. */
  readonly pending = new Float64Array(FIELDS.length)
  /** An addition sent whose answer did not come: sent again as it is, under its token. */
  unconfirmed: { token: string; counts: Float64Array } | undefined = undefined
  storageBytes = 0
  dirty = false
  /** The store's record has been read in (on a shared store that happens in the background). */
  loaded = false

  constructor(
    readonly accountId: string,
    readonly day: number,
  ) {}

  get requests(): number {
    let n = 0
    for (let i = 0; i < OPS.length; i++) n += this.total[i]!
    return n
  }

  /** Takes in the store's record: its totals plus what is still pending here. */
  settle(rec: DayRecord | undefined): void {
    this.loaded = true
    const held = this.unconfirmed?.counts
    FIELDS.forEach((f, i) => {
      this.total[i] = Number(rec?.[f] ?? 0) + this.pending[i]! + (held?.[i] ?? 0)
    })
    this.storageBytes = Number(rec?.storageBytes ?? this.storageBytes)
  }

  toDay(): DayUsage {
    const operations = {} as Record<OpName, number>
    OPS.forEach((op, i) => {
      operations[op] = this.total[i]!
    })
    return {
      date: dateOf(this.day),
      requests: this.requests,
      operations,
      errors: this.total[ERRORS]!,
      rateLimited: this.total[RATE_LIMITED]!,
      bytesIn: this.total[BYTES_IN]!,
      bytesOut: this.total[BYTES_OUT]!,
      watchEvents: this.total[WATCH_EVENTS]!,
      storageBytes: this.storageBytes,
    }
  }
}

export const dayOf = (ms: number) => Math.floor(ms / DAY_MS)
export const dateOf = (day: number) => new Date(day * DAY_MS).toISOString().slice(0, 10)
const recordId = (accountId: string, day: number) => `${accountId}/${dateOf(day)}`

export function emptyDay(day: number): DayUsage {
  return new DayCounters('', day).toDay()
}

/** Names this front end's additions: tokens are `<this>.<sequence>`. */
const FRONT_END = randomBytes(9).toString('base64url')

export class Usage {
  /** Today's counters of the accounts seen since the last pass (and of those still dirty). */
  private counters = new Map<string, DayCounters>()
  /** A past day's counters with counts still to add (the day turned before a pass). */
  private leftovers: DayCounters[] = []
  private sequence = 0
  private flushing: Promise<void> | null = null
  private prunedDay = dayOf(Date.now())

  constructor(
    private store: Store,
    private accounts: Accounts,
    private storageOf: (a: Account) => Promise<number>,
  ) {}

  /** The account's counters for the current UTC day (a new day starts from zero). */
  today(accountId: string, now: number): DayCounters {
    const day = dayOf(now)
    let c = this.counters.get(accountId)
    if (c === undefined || c.day !== day) {
      if (c?.dirty) this.leftovers.push(c)
      c = new DayCounters(accountId, day)
      this.counters.set(accountId, c)
      this.load(c)
    }
    return c
  }

  /** Reads the day's record in: at once from a store that can, else in the background. */
  private load(c: DayCounters): void {
    const id = recordId(c.accountId, c.day)
    const r = this.store.records
    if (r.getNow !== undefined) return c.settle(r.getNow<DayRecord>('usage', id))
    r.get<DayRecord>('usage', id).then(
      (rec) => c.settle(rec),
      () => {},
    )
  }

  /**
   * Counts one answered request (`count` requests for a transaction of that many ops). 429s
   * count apart, not as requests of their operation.
   */
  record(
    accountId: string,
    op: number,
    status: number,
    bytesIn: number,
    bytesOut: number,
    now: number,
    count = 1,
  ): void {
    const c = this.today(accountId, now)
    const add = (i: number, n: number) => {
      c.total[i]! += n
      c.pending[i]! += n
    }
    if (status === 429) add(RATE_LIMITED, 1)
    else {
      add(op, count)
      if (status >= 400) add(ERRORS, 1)
    }
    add(BYTES_IN, bytesIn)
    add(BYTES_OUT, bytesOut)
    c.dirty = true
  }

  /** Counts events delivered to a watch, and their bytes. */
  watchEvents(accountId: string, events: number, bytesOut: number, now: number): void {
    const c = this.today(accountId, now)
    c.total[WATCH_EVENTS]! += events
    c.pending[WATCH_EVENTS]! += events
    c.total[BYTES_OUT]! += bytesOut
    c.pending[BYTES_OUT]! += bytesOut
    c.dirty = true
  }

  /** Adds every changed day's counts to the store; concurrent calls share one pass. */
  flush(): Promise<void> {
    if (this.flushing) return this.flushing.then(() => this.flush())
    this.flushing = this.writeDirty().finally(() => {
      this.flushing = null
    })
    return this.flushing
  }

  /** Resolves when no pass is under way (whether or not the last one succeeded). */
  private async passDone(): Promise<void> {
    while (this.flushing) await this.flushing.catch(() => {})
  }

  private async writeDirty(): Promise<void> {
    let failed: unknown
    const past = this.leftovers
    this.leftovers = []
    for (const c of [...past, ...this.counters.values()]) {
      const id = c.accountId
      if (!c.dirty) {
        // Idle for a whole pass: read afresh when it is next needed.
        if (this.counters.get(id) === c) this.counters.delete(id)
        continue
      }
      const a = await this.accounts.get(id)
      if (a === undefined || a.deleted) {
        if (this.counters.get(id) === c) this.counters.delete(id)
        continue
      }
      c.dirty = false
      try {
        c.storageBytes = await this.storageOf(a)
        // What was sent before and not confirmed goes first, unchanged, under its token.
        if (c.unconfirmed !== undefined) await this.add(c, c.unconfirmed)
        if (c.pending.some((n) => n !== 0)) {
          const batch = { token: `${FRONT_END}.${++this.sequence}`, counts: c.pending.slice() }
          c.pending.fill(0)
          c.unconfirmed = batch
          await this.add(c, batch)
        }
      } catch (err) {
        // A full disk or an unreachable store: the counts stay for a later pass, sent as
        // they were (an add made already is not made twice; one that failed added nothing).
        c.dirty = true
        failed = err
      }
      if (c.dirty && this.counters.get(id) !== c) this.leftovers.push(c)
    }
    if (failed !== undefined) throw failed
    await this.prune()
  }

  /** Adds one batch to the day's record, and takes in the totals; the batch is then done. */
  private async add(c: DayCounters, batch: { token: string; counts: Float64Array }) {
    const delta: Record<string, number> = {}
    FIELDS.forEach((f, i) => {
      if (batch.counts[i] !== 0) delta[f] = batch.counts[i]!
    })
    const totals = await this.store.records.add(
      'usage',
      recordId(c.accountId, c.day),
      delta,
      { storageBytes: c.storageBytes },
      batch.token,
    )
    if (c.unconfirmed === batch) c.unconfirmed = undefined
    c.settle(totals)
  }

  /** Once a day, removes the records of active accounts that fell out of the kept window. */
  private async prune(): Promise<void> {
    const today = dayOf(Date.now())
    if (today === this.prunedDay) return
    this.prunedDay = today
    const cutoff = dateOf(today - KEEP_DAYS)
    for (const id of this.counters.keys()) {
      const page = await this.store.records.list('usage', `${id}/`, undefined, 200)
      const old = page.items.filter(([key]) => key.slice(id.length + 1) < cutoff)
      await this.store.records.batch(
        old.map(([key]) => ({ kind: 'usage' as const, id: key, delete: true as const })),
      )
    }
  }

  /** The last `days` days, oldest first, today last. */
  async days(a: Account, days: number): Promise<DayUsage[]> {
    const today = dayOf(Date.now())
    const out: DayUsage[] = []
    for (let d = today - days + 1; d <= today; d++) {
      const c = new DayCounters(a.id, d)
      const live = this.counters.get(a.id)
      const here = d === today && live !== undefined && live.day === d ? live : undefined
      // Alone on its store, this process's totals are exact. Sharing it, they are as of this
      // process's last pass: the store's totals plus what is pending here are fresher.
      if (here?.loaded && this.store.soleWriter) {
        c.total.set(here.total)
      } else {
        // A pass moves counts out of `pending` before the store has added them: read between
        // the two and they are in neither. So wait out a pass, and take `pending` as it is
        // when the read is sent; a later pass's add is sent after it.
        if (here) await this.passDone()
        const pending = here ? Float64Array.from(here.pending) : undefined
        const rec = await this.store.records.get<DayRecord>('usage', recordId(a.id, d))
        if (rec === undefined && d !== today) {
          out.push(emptyDay(d))
          continue
        }
        c.settle(rec)
        if (pending) for (let i = 0; i < c.total.length; i++) c.total[i]! += pending[i]!
      }
      if (d === today) c.storageBytes = await this.storageOf(a)
      out.push(c.toDay())
    }
    return out
  }

  async forget(a: Account): Promise<void> {
    this.counters.delete(a.id)
    for (;;) {
      const page = await this.store.records.list('usage', `${a.id}/`, undefined, 1000)
      if (page.items.length === 0) return
      await this.store.records.batch(
        page.items.map(([id]) => ({ kind: 'usage' as const, id, delete: true as const })),
      )
    }
  }
}
