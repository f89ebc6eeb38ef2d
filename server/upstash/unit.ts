// One unit of work over a namespace: a command, or a whole multi-exec. Reads go to the store
// (through the data service) and are remembered with their versions; writes are staged, one
// final state per key. Commit sends them as one Cairn transaction in which every key read
// must still have the version it had, so the unit applies all or nothing and as if alone; when
// another write came in between, the caller runs the unit again (run.ts).
import type { Account, NamespaceInfo } from '../services/accounts.js'
import type { Data } from '../services/data.js'
import type { Plan } from '../services/plans.js'
import type { Entry, TxOp } from '../store/types.js'
import { ApiError } from '../wire/errors.js'
import { validKey } from '../wire/keys.js'
import { RedisError } from './errors.js'

/** A key's state as this unit sees it. */
export interface Cur {
  value: Buffer
  /** Milliseconds since the epoch. */
  expiresAt?: number
  metadata?: Buffer
}

interface Staged extends Cur {
  /** false when only the expiry changed: the store keeps the value (a patch). */
  valueChanged: boolean
}

const gone = (err: unknown) =>
  (err as { code?: string }).code === 'NAMESPACE_NOT_FOUND'
    ? new ApiError('namespace_not_found')
    : err

export function checkKey(key: string): string {
  if (!validKey(key))
    throw new RedisError(
      'ERR invalid key: a key is 1 to 512 bytes of UTF-8 without control characters or "." and ".." path segments',
    )
  return key
}

export class Unit {
  /** What the store held, by key (null: absent), for the keys read. */
  private base = new Map<string, (Entry & { version: number }) | null>()
  /** The final state of each key written (null: deleted). */
  private staged = new Map<string, Staged | null>()
  /** The last write's version once committed. */
  version: number | undefined
  readonly now = Date.now()

  constructor(
    readonly data: Data,
    readonly account: Account,
    readonly info: NamespaceInfo,
    readonly plan: Plan,
    /** A multi-exec: reads are checked at commit even when nothing is written. */
    readonly isolated: boolean,
    /** The namespace's live keys, as the store counts them. */
    private keyCount: () => Promise<number>,
  ) {}

  get writes(): boolean {
    return this.staged.size > 0
  }

  /** The keys written so far, with whether each is now present. */
  stagedKeys(): [string, boolean][] {
    return [...this.staged].map(([k, s]) => [k, s !== null])
  }

  /** What the store holds for `key`, read once. */
  async stored(key: string): Promise<Entry | undefined> {
    let b = this.base.get(key)
    if (b === undefined) {
      let got: Entry | undefined
      try {
        got = await this.data.get(this.info, key)
      } catch (err) {
        throw gone(err)
      }
      b = got ?? null
      // A second read of the same key (before the first answered) keeps the first.
      if (!this.base.has(key)) this.base.set(key, b)
      else b = this.base.get(key)!
    }
    return b ?? undefined
  }

  /** The key as this unit sees it: its own writes first. */
  async get(key: string): Promise<Cur | undefined> {
    const s = this.staged.get(key)
    if (s !== undefined) return s ?? undefined
    return this.stored(key)
  }

  /** Stages a new value; `expiresAt` undefined means no expiry. */
  put(key: string, value: Buffer, expiresAt: number | undefined, metadata?: Buffer): void {
    const max = this.plan.maxValueBytes
    if (max !== null && value.length > max)
      throw new RedisError(
        `ERR the value is ${value.length} bytes as JSON; the ${this.plan.id} plan allows ${max}`,
      )
    if (expiresAt !== undefined && expiresAt <= this.now) return this.delete(key)
    this.staged.set(key, { value, expiresAt, metadata, valueChanged: true })
  }

  /** Stages a new expiry for a key this unit has seen present. */
  expire(key: string, cur: Cur, expiresAt: number | undefined): void {
    if (expiresAt !== undefined && expiresAt <= this.now) return this.delete(key)
    const was = this.staged.get(key)
    this.staged.set(key, {
      value: cur.value,
      expiresAt,
      metadata: cur.metadata,
      valueChanged: was?.valueChanged ?? false,
    })
  }

  delete(key: string): void {
    this.staged.set(key, null)
  }

  /**
   * A page of keys in order, with this unit's own writes: keys it deleted left out, keys it
   * wrote within the page's stretch of the order put in.
   */
  async list(
    prefix: string,
    after: string | undefined,
    limit: number,
  ): Promise<{ keys: string[]; next?: string }> {
    let page: { keys: string[]; next?: string }
    try {
      page = await this.data.list(this.info, { prefix, after, limit })
    } catch (err) {
      throw gone(err)
    }
    if (this.staged.size === 0) return page
    const keys = page.keys.filter((k) => this.staged.get(k) !== null)
    const seen = new Set(keys)
    const end = page.next === undefined ? undefined : Buffer.from(page.next)
    const low = after === undefined ? undefined : Buffer.from(after)
    for (const [k, s] of this.staged) {
      if (s === null || seen.has(k) || !k.startsWith(prefix)) continue
      const b = Buffer.from(k)
      if (low !== undefined && Buffer.compare(b, low) <= 0) continue
      if (end !== undefined && Buffer.compare(b, end) > 0) continue
      keys.push(k)
    }
    keys.sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)))
    return page.next === undefined ? { keys } : { keys, next: page.next }
  }

  /** The namespace's live keys, this unit's own writes counted. */
  async count(): Promise<number> {
    let n = await this.keyCount()
    for (const [k, s] of this.staged) {
      const was = (await this.stored(k)) !== undefined
      n += Number(s !== null) - Number(was)
    }
    return n
  }

  /** The ops of the Cairn transaction that applies this unit. */
  private ops(): TxOp[] {
    const ops: TxOp[] = []
    for (const [key, s] of this.staged) {
      const b = this.base.get(key)
      // undefined: written without being read (a blind SET); null: read, and absent.
      if (s === null) {
        if (b === null) ops.push({ op: 'check', key, version: null })
        else if (b === undefined) ops.push({ op: 'delete', key })
        else ops.push({ op: 'delete', key, ifVersion: b.version })
      } else if (!s.valueChanged && b) {
        ops.push(
          s.expiresAt === undefined
            ? { op: 'patch', key, persist: true, ifVersion: b.version }
            : { op: 'patch', key, expiresAt: s.expiresAt, ifVersion: b.version },
        )
      } else {
        const op: TxOp = { op: 'put', key, value: s.value }
        if (s.expiresAt !== undefined) op.expiresAt = s.expiresAt
        if (s.metadata !== undefined) op.metadata = s.metadata
        if (b !== undefined) op.ifVersion = b?.version ?? null
        ops.push(op)
      }
    }
    if (this.staged.size > 0 || (this.isolated && this.base.size > 1))
      for (const [key, b] of this.base)
        if (!this.staged.has(key)) ops.push({ op: 'check', key, version: b?.version ?? null })
    return ops
  }

  /** Applies the staged writes; rejects with precondition_failed when a key read has changed. */
  async commit(): Promise<void> {
    const ops = this.ops()
    if (ops.length === 0) return
    const done = await this.data.transact(this.account, this.info, ops, this.plan)
    this.version = done.version
  }
}

/** A store's refusal because a key read has changed since: the unit runs again. */
export const isConflict = (err: unknown) =>
  err instanceof ApiError && err.code === 'precondition_failed'
