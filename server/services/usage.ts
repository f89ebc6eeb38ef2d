// Usage: per account and UTC day, requests by operation, errors, 429s and bytes. Counting is
// a few additions on this front end's counters; a timer adds what was counted since the last
// pass to the day's record in the store every couple of seconds and at shutdown, and reads
// back the record's totals, so several front ends on one store count into one total and the
// daily quota sees all of them (within a pass). A crash loses at most one interval's counts.
// Each pass's addition carries a token of its own; one whose answer was lost is sent again
// as it was, under the same token, and the store makes it once (types.ts, Records.add).
//
// The day's record also holds its hours and its namespaces, as fields of their own
// (`h<HH>.<field>`, `n.<namespace>.<operation>`): they are added in the same addition as the
// day's totals, so they are as durable, as shared and as exact as those, at no extra write.
// Day records are kept KEEP_DAYS, so the hours are kept as long.
import type { Clock } from './clock.js'
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
  'upstash',
  'export',
  'import',
  'restore',
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
  upstash: 10,
  export: 11,
  import: 12,
  restore: 13,
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
const HOUR_MS = 3_600_000
/** Days of records kept; older ones are removed when the day turns. */
const KEEP_DAYS = 90
/** What each hour keeps: its requests by operation, its errors and its 429s. */
const HOUR_FIELDS = [...OPS, 'errors', 'rateLimited'] as const
/**
 * The most hour and namespace fields one day's counters hold: every hour's, and past that
 * namespaces only up to the number any account may hold (a day's counters are bounded
 * whatever names its requests use).
 */
const MAX_EXTRA = 24 * HOUR_FIELDS.length + 10_000 * OPS.length

const hourField = (hour: number, f: string) => `h${hour < 10 ? '0' : ''}${hour}.${f}`
/** Every hour's field names, made once: counting a request builds no string. */
const HOUR_KEYS = Array.from({ length: 24 }, (_, h) => HOUR_FIELDS.map((f) => hourField(h, f)))
const H_ERRORS = OPS.length
const H_RATE_LIMITED = OPS.length + 1

/** One UTC hour's counts, as GET /usage reports them. */
export interface HourUsage {
  /** The hour's start, e.g. `2026-12-01T10:00:00Z`. */
  hour: string
  requests: number
  errors: number
  rateLimited: number
  operations: Record<string, number>
}

/** One namespace's requests today. */
export interface NamespaceToday {
  requests: number
  operations: Record<string, number>
}

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
  /** The hours' and namespaces' fields: the store's as of the last pass plus what is new here. */
  readonly extra = new Map<string, number>()
  /** Hour and namespace fields counted here since the last pass. */
  readonly extraPending = new Map<string, number>()
  /** An addition sent whose answer did not come: sent again as it is, under its token. */
  unconfirmed: Batch | undefined = undefined
  /** Each namespace's field names by operation, made once per namespace and day. */
  private nsKeys = new Map<string, string[]>()
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

  /** The field counting operation `op` to namespace `ns`. */
  nsField(ns: string, op: number): string {
    let keys = this.nsKeys.get(ns)
    if (keys === undefined) {
      keys = OPS.map((o) => `n.${ns}.${o}`)
      if (this.nsKeys.size < 10_000) this.nsKeys.set(ns, keys)
    }
    return keys[op]!
  }

  /** Counts `n` to an hour or namespace field (bounded: see MAX_EXTRA). */
  bump(field: string, n: number): void {
    if (!this.extra.has(field) && this.extra.size >= MAX_EXTRA) return
    this.extra.set(field, (this.extra.get(field) ?? 0) + n)
    this.extraPending.set(field, (this.extraPending.get(field) ?? 0) + n)
  }

  /** Takes in the store's record: its totals plus what is still pending here. */
  settle(rec: DayRecord | undefined): void {
    this.loaded = true
    const held = this.unconfirmed
    FIELDS.forEach((f, i) => {
      this.total[i] = Number(rec?.[f] ?? 0) + this.pending[i]! + (held?.counts[i] ?? 0)
    })
    this.storageBytes = Number(rec?.storageBytes ?? this.storageBytes)
    this.extra.clear()
    if (rec !== undefined)
      for (const f of Object.keys(rec))
        if (f.includes('.')) this.extra.set(f, Number(rec[f as never]))
    const addIn = (m: Map<string, number>) => {
      for (const [f, n] of m) this.extra.set(f, (this.extra.get(f) ?? 0) + n)
    }
    addIn(this.extraPending)
    if (held) addIn(held.extras)
  }

  /** The day's hour `hour` (0 to 23). */
  toHour(hour: number): HourUsage {
    const operations: Record<string, number> = {}
    let requests = 0
    for (const op of OPS) {
      const n = this.extra.get(hourField(hour, op)) ?? 0
      operations[op] = n
      requests += n
    }
    return {
      hour: hourName(this.day * 24 + hour),
      requests,
      errors: this.extra.get(hourField(hour, 'errors')) ?? 0,
      rateLimited: this.extra.get(hourField(hour, 'rateLimited')) ?? 0,
      operations,
    }
  }

  /** Each namespace's requests on this day, by name. */
  namespaces(): Map<string, NamespaceToday> {
    const out = new Map<string, NamespaceToday>()
    for (const [f, n] of this.extra) {
      if (!f.startsWith('n.')) continue
      const dot = f.lastIndexOf('.')
      const name = f.slice(2, dot)
      let row = out.get(name)
      if (row === undefined) {
        row = { requests: 0, operations: Object.fromEntries(OPS.map((op) => [op, 0])) }
        out.set(name, row)
      }
      row.operations[f.slice(dot + 1)] = (row.operations[f.slice(dot + 1)] ?? 0) + n
      row.requests += n
    }
    return out
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

/** An addition of one pass: the day's fields, and the hours' and namespaces'. */
interface Batch {
  token: string
  counts: Float64Array
  extras: Map<string, number>
}

export const dayOf = (ms: number) => Math.floor(ms / DAY_MS)
/** Hour number `h` (hours since the epoch) as usage names it: `2026-12-01T10:00:00Z`. */
export const hourName = (h: number) => `${new Date(h * HOUR_MS).toISOString().slice(0, 13)}:00:00Z`
export const dateOf = (day: number) => new Date(day * DAY_MS).toISOString().slice(0, 10)
const recordId = (accountId: string, day: number) => `${accountId}/${dateOf(day)}`

/** The last `n` hours up to `now`'s, from the days' counters (a day not there counted none). */
function hoursOf(days: Map<number, DayCounters | undefined>, now: number, n: number): HourUsage[] {
  const out: HourUsage[] = []
  const current = Math.floor(now / HOUR_MS)
  for (let h = current - n + 1; h <= current; h++) {
    const day = Math.floor(h / 24)
    out.push((days.get(day) ?? new DayCounters('', day)).toHour(h - day * 24))
  }
  return out
}

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
  private prunedDay: number
  private passHooks: ((accountId: string, requests: number, storageBytes: number) => unknown)[] = []

  constructor(
    private store: Store,
    private accounts: Accounts,
    private storageOf: (a: Account) => Promise<number>,
    private readonly clock: Clock,
  ) {
    this.prunedDay = dayOf(clock.now())
  }

  /**
   * Calls `fn` after each pass has added an account's counts for today, with its requests
   * today (every front end's) and its stored bytes: where usage alerts are checked.
   */
  onPass(fn: (accountId: string, requests: number, storageBytes: number) => unknown): void {
    this.passHooks.push(fn)
  }

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
   * count apart, not as requests of their operation. `ns` names the namespace the request
   * was addressed to, if any: it counts to it too (429s do not).
   */
  record(
    accountId: string,
    op: number,
    status: number,
    bytesIn: number,
    bytesOut: number,
    now: number,
    count = 1,
    ns = '',
  ): void {
    const c = this.today(accountId, now)
    const add = (i: number, n: number) => {
      c.total[i]! += n
      c.pending[i]! += n
    }
    const hour = HOUR_KEYS[Math.floor((now - c.day * DAY_MS) / HOUR_MS)]!
    if (status === 429) {
      add(RATE_LIMITED, 1)
      c.bump(hour[H_RATE_LIMITED]!, 1)
    } else {
      add(op, count)
      c.bump(hour[op]!, count)
      if (ns !== '') c.bump(c.nsField(ns, op), count)
      if (status >= 400) {
        add(ERRORS, 1)
        c.bump(hour[H_ERRORS]!, 1)
      }
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
        if (c.pending.some((n) => n !== 0) || c.extraPending.size > 0) {
          const batch: Batch = {
            token: `${FRONT_END}.${++this.sequence}`,
            counts: c.pending.slice(),
            extras: new Map(c.extraPending),
          }
          c.pending.fill(0)
          c.extraPending.clear()
          c.unconfirmed = batch
          await this.add(c, batch)
        }
        if (c.day === dayOf(this.clock.now())) await this.passed(c)
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

  private async passed(c: DayCounters): Promise<void> {
    for (const fn of this.passHooks) {
      try {
        await fn(c.accountId, c.requests, c.storageBytes)
      } catch {
        // An alert not checked now is checked at the next pass: counts are not held up.
      }
    }
  }

  /** Adds one batch to the day's record, and takes in the totals; the batch is then done. */
  private async add(c: DayCounters, batch: Batch) {
    const delta: Record<string, number> = {}
    FIELDS.forEach((f, i) => {
      if (batch.counts[i] !== 0) delta[f] = batch.counts[i]!
    })
    for (const [f, n] of batch.extras) delta[f] = n
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
    const today = dayOf(this.clock.now())
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

  /**
   * One day's counters as they stand: undefined for a past day with no record. Alone on its
   * store, this process's totals are exact. Sharing it, they are as of this process's last
   * pass: the store's totals plus what is pending here are fresher.
   */
  private async snapshot(accountId: string, d: number): Promise<DayCounters | undefined> {
    const today = dayOf(this.clock.now())
    const c = new DayCounters(accountId, d)
    const live = this.counters.get(accountId)
    const here = d === today && live !== undefined && live.day === d ? live : undefined
    if (here?.loaded && this.store.supports.soleWriter) {
      c.total.set(here.total)
      for (const [f, n] of here.extra) c.extra.set(f, n)
      return c
    }
    // A pass moves counts out of `pending` before the store has added them: read between
    // the two and they are in neither. So wait out a pass, and take `pending` as it is
    // when the read is sent; a later pass's add is sent after it.
    if (here) await this.passDone()
    const pending = here ? Float64Array.from(here.pending) : undefined
    const extras = here ? new Map(here.extraPending) : undefined
    const rec = await this.store.records.get<DayRecord>('usage', recordId(accountId, d))
    if (rec === undefined && d !== today) return undefined
    c.settle(rec)
    if (pending) for (let i = 0; i < c.total.length; i++) c.total[i]! += pending[i]!
    if (extras) for (const [f, n] of extras) c.extra.set(f, (c.extra.get(f) ?? 0) + n)
    return c
  }

  /** The last `days` days, oldest first, today last. */
  async days(a: Account, days: number): Promise<DayUsage[]> {
    return (await this.report(a, days, 0)).days
  }

  /**
   * The last `hours` UTC hours, oldest first, ending with the current one (its counts so
   * far). At most the days kept.
   */
  async hourly(
    accountId: string,
    hours: number,
  ): Promise<
    Array<{
      hour: string
      requests: number
      errors: number
      rateLimited: number
      operations: Record<string, number>
    }>
  > {
    const n = Math.max(0, Math.min(Math.floor(hours), KEEP_DAYS * 24))
    const days = new Map<number, DayCounters | undefined>()
    const now = this.clock.now()
    for (let d = dayOf(now - (n - 1) * HOUR_MS); d <= dayOf(now) && n > 0; d++)
      days.set(d, await this.snapshot(accountId, d))
    return hoursOf(days, now, n)
  }

  /**
   * What GET /usage reports from the counters, read once: the last `days` days, the last
   * `hours` hours and today's requests by namespace.
   */
  async report(
    a: Account,
    days: number,
    hours: number,
  ): Promise<{ days: DayUsage[]; hours: HourUsage[]; namespaces: Map<string, NamespaceToday> }> {
    const now = this.clock.now()
    const today = dayOf(now)
    const from = Math.min(today - days + 1, dayOf(now - Math.max(0, hours - 1) * HOUR_MS))
    const read = new Map<number, DayCounters | undefined>()
    for (let d = from; d <= today; d++) read.set(d, await this.snapshot(a.id, d))
    const out: DayUsage[] = []
    for (let d = today - days + 1; d <= today; d++) {
      const c = read.get(d)
      if (c === undefined) {
        out.push(emptyDay(d))
        continue
      }
      if (d === today) c.storageBytes = await this.storageOf(a)
      out.push(c.toDay())
    }
    return {
      days: out,
      hours: hoursOf(read, now, hours),
      namespaces: read.get(today)?.namespaces() ?? new Map(),
    }
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
