// Reading and writing an account's entries: the rules /v1 and the dashboard's data browser
// share (namespace lookup, conditional writes, the storage quota, TTLs), over the store.
import { randomBytes } from 'node:crypto'
import type { Account, Accounts, NamespaceInfo } from './accounts.js'
import { ApiError, noSuchNamespace } from '../wire/errors.js'
import { apiErrorOf, isConflict, isGone } from './store-errors.js'
import type { Namespaces } from './namespaces.js'
import type { Plan, PlanBook } from './plans.js'
import { storageFault } from './storage-faults.js'
import type {
  Entry,
  KeyRangeOptions,
  ListOptions,
  RangeCounts,
  RangeSnapshot,
  Listed,
  Store,
  Transacted,
  TxOp,
  Written,
} from '../store/types.js'
import { type Tags, matches, singleVersion } from '../wire/conditions.js'

export interface WriteOptions {
  /** Seconds from now. */
  ttl?: number
  /** Unix seconds. */
  expiresAt?: number
  ifMatch?: Tags
  ifNoneMatch?: Tags
  /** The metadata's JSON text; absent means none. */
  metadata?: Buffer
}

/** A store's transaction failure as the API names it, with the op to blame. */
function txFailure(err: unknown): unknown {
  const e = err as { index?: number }
  if (e.index === undefined) return isGone(err) ? new ApiError('namespace_not_found') : err
  return apiErrorOf(err)
}

/** What metadata adds to a namespace's bytes as the store counts them (StoreSupports.metadataOverhead). */
function metadataBytes(m: Buffer | null | undefined, overhead: number): number {
  return overhead < 0 || !m ? 0 : m.length + overhead
}

/**
 * The most bytes a transaction's op can add to the account, for the storage quota, as the
 * store counts them (`metadataOverhead`: -1 where metadata is not counted): a put's key,
 * value and metadata; an increment's key and as many digits as it could add (it may create
 * the key, or carry into a new digit); a patch's metadata.
 */
function mostAdded(op: TxOp, metadataOverhead: number): number {
  const md = (m: Buffer | null | undefined) => metadataBytes(m, metadataOverhead)
  switch (op.op) {
    case 'put':
      return Buffer.byteLength(op.key) + op.value.length + md(op.metadata)
    case 'increment':
      return Buffer.byteLength(op.key) + op.by.toString().length + 1
    case 'patch':
      return (
        md(op.metadata) +
        (op.by === undefined ? 0 : Buffer.byteLength(op.key) + op.by.toString().length + 1)
      )
    default:
      return 0
  }
}

function present(info: NamespaceInfo | undefined, name: string): NamespaceInfo {
  if (info === undefined) throw new ApiError('namespace_not_found', noSuchNamespace(name))
  return info
}

/** Settles nothing: a write that reserved nothing. */
const none = (_added: number): void => {}
/** Names this front end's storage reservations: `<this>.<sequence>`. */
const FRONT = randomBytes(9).toString('base64url')
let reserved = 0

export class Data {
  /** Whether the store answers reads synchronously (getNow). */
  readonly readsNow: boolean
  private refusedHooks: ((account: Account, wouldBe: number) => unknown)[] = []

  /** Calls `fn` when a write is refused for the storage quota (with the bytes it would make). */
  onStorageRefused(fn: (account: Account, wouldBe: number) => unknown): void {
    this.refusedHooks.push(fn)
  }

  constructor(
    private store: Store,
    private accounts: Accounts,
    private namespaces: Namespaces,
    private plans: PlanBook,
  ) {
    this.readsNow = store.getNow !== undefined
  }

  /** The account's namespace, or an ApiError; at once unless a shared store must be asked. */
  namespace(account: Account, name: string): NamespaceInfo | Promise<NamespaceInfo> {
    const found = this.accounts.namespace(account, name)
    return found instanceof Promise ? found.then((i) => present(i, name)) : present(found, name)
  }

  getNow(info: NamespaceInfo, key: string): Entry | undefined {
    return this.store.getNow!(info.storeName, key)
  }

  /** The store's own promise: a namespace dropped meanwhile rejects with NAMESPACE_NOT_FOUND. */
  get(info: NamespaceInfo, key: string): Promise<Entry | undefined> {
    return this.store.get(info.storeName, key)
  }

  async put(
    account: Account,
    info: NamespaceInfo,
    key: string,
    json: Buffer,
    o: WriteOptions,
    plan: Plan = this.plans.get(account.rec.plan),
  ): Promise<Written> {
    let ifVersion: number | null | undefined
    let oldBytes = -1
    const quota = plan.maxStorageBytes
    const fast =
      o.ifMatch !== undefined && o.ifNoneMatch === undefined ? singleVersion(o.ifMatch) : undefined
    if (
      quota !== null ||
      (o.ifMatch !== undefined && fast === undefined) ||
      (o.ifNoneMatch !== undefined && o.ifNoneMatch !== '*')
    ) {
      const cur = await this.stat(info, key)
      oldBytes = cur?.bytes ?? 0
      const v = cur?.version
      if (o.ifMatch !== undefined && !matches(o.ifMatch, v))
        throw new ApiError('precondition_failed')
      if (
        o.ifNoneMatch !== undefined &&
        (o.ifNoneMatch === '*' ? v !== undefined : matches(o.ifNoneMatch, v))
      ) {
        throw new ApiError('precondition_failed')
      }
      // The store checks again at the moment of the write, so nothing can slip in between.
      if (o.ifMatch !== undefined || o.ifNoneMatch !== undefined) ifVersion = v ?? null
    } else if (fast !== undefined) ifVersion = fast
    else if (o.ifNoneMatch === '*') ifVersion = null
    const md = metadataBytes(o.metadata, this.store.supports.metadataOverhead)
    const delta = Buffer.byteLength(key) + json.length + md - oldBytes
    const settle =
      quota !== null ? await this.checkQuota(account, plan, quota, delta, 'write') : none
    try {
      const done = await this.store.put(info.storeName, key, json, {
        ttlMs: o.ttl !== undefined ? o.ttl * 1000 : undefined,
        expiresAt: o.expiresAt !== undefined ? o.expiresAt * 1000 : undefined,
        ifVersion,
        metadata: o.metadata,
      })
      settle(delta)
      if (quota !== null) this.namespaces.wrote(account, delta)
      return done
    } catch (err) {
      settle(0)
      if (isConflict(err)) throw new ApiError('precondition_failed')
      // Dropped while the body arrived: said as withNamespace says it (v1/entries.ts).
      if (isGone(err)) throw new ApiError('namespace_not_found', noSuchNamespace(info.name))
      throw err
    }
  }

  /**
   * true when a key was deleted, false when there was none; ApiError on a failed condition.
   * `ifNoneMatch` is HTTP's: `*` (or the key's version) present refuses the delete.
   */
  async delete(
    info: NamespaceInfo,
    key: string,
    ifMatch?: Tags,
    ifNoneMatch?: Tags,
  ): Promise<boolean> {
    let ifVersion: number | undefined
    const fast =
      ifMatch !== undefined && ifNoneMatch === undefined ? singleVersion(ifMatch) : undefined
    if (fast !== undefined) ifVersion = fast
    else if (ifMatch !== undefined || ifNoneMatch !== undefined) {
      const v = (await this.stat(info, key))?.version
      if (ifMatch !== undefined && !matches(ifMatch, v)) throw new ApiError('precondition_failed')
      if (ifNoneMatch !== undefined && matches(ifNoneMatch, v))
        throw new ApiError('precondition_failed')
      if (v === undefined) return false
      // The store checks again at the moment of the write, so nothing can slip in between.
      ifVersion = v
    }
    try {
      return await this.store.delete(
        info.storeName,
        key,
        ifVersion === undefined ? undefined : { ifVersion },
      )
    } catch (err) {
      if (isConflict(err)) throw new ApiError('precondition_failed')
      if (isGone(err)) throw new ApiError('namespace_not_found')
      throw err
    }
  }

  list(info: NamespaceInfo, o: ListOptions): Promise<Listed> {
    return this.store.list(info.storeName, o)
  }

  /** The live keys of a prefix or range and their bytes, at one version. */
  countRange(info: NamespaceInfo, range: KeyRangeOptions): Promise<RangeCounts> {
    return this.store.countRange(info.storeName, range)
  }

  /** A read of a prefix or range as it is now, whatever is written meanwhile (an export). */
  snapshot(info: NamespaceInfo, range: KeyRangeOptions): Promise<RangeSnapshot> {
    return this.store.snapshot(info.storeName, range)
  }

  /** A page at once, or undefined when the store can only answer with list(). */
  listNow(info: NamespaceInfo, o: ListOptions): Listed | undefined {
    return this.store.listNow?.(info.storeName, o)
  }

  /**
   * A transaction (also PATCH's one op). The storage quota is checked against what its puts
   * add, as a PUT's is; the store applies all or nothing.
   */
  async transact(
    account: Account,
    info: NamespaceInfo,
    ops: TxOp[],
    plan: Plan = this.plans.get(account.rec.plan),
  ): Promise<Transacted> {
    // An increment's result is a value like any other: at most the plan's largest.
    if (plan.maxValueBytes !== null)
      for (const op of ops)
        if (op.op === 'increment' || (op.op === 'patch' && op.by !== undefined))
          op.maxBytes = plan.maxValueBytes
    const quota = plan.maxStorageBytes
    let settle = none
    let adds = 0
    if (quota !== null) {
      adds = ops.reduce((sum, op) => sum + mostAdded(op, this.store.supports.metadataOverhead), 0)
      const what = ops.some((op) => op.op === 'patch') ? 'change' : 'transaction'
      if (adds > 0) settle = await this.checkQuota(account, plan, quota, adds, what)
    }
    try {
      const done = await this.store.transact(info.storeName, ops)
      // What it added is not known here: at most `adds`, which a later count corrects.
      settle(adds)
      if (quota !== null) this.namespaces.wrote(account)
      return done
    } catch (err) {
      settle(0)
      throw txFailure(err)
    }
  }

  /**
   * An import's writes (services/imports.ts): a transaction whose storage was checked for the
   * whole import before any of it applied (importFits), so no part of it is refused for the
   * quota on its own.
   */
  async importWrite(account: Account, info: NamespaceInfo, ops: TxOp[]): Promise<Transacted> {
    try {
      const done = await this.store.transact(info.storeName, ops)
      if (this.plans.get(account.rec.plan).maxStorageBytes !== null) this.namespaces.wrote(account)
      return done
    } catch (err) {
      throw txFailure(err)
    }
  }

  /**
   * Refuses an import that would take the account past its plan's storage quota (ApiError):
   * `adds` is what its entries hold, `freed` what the writes replace or delete (the bytes of
   * the keys it overwrites, and in `replace` mode the range's), as the store counts them.
   */
  async importFits(account: Account, adds: number, freed: () => Promise<number>): Promise<void> {
    const quota = this.plans.get(account.rec.plan).maxStorageBytes
    if (quota === null || adds <= 0) return
    let used = await this.namespaces.storageBytes(account, true)
    if (used + adds <= quota) return
    used -= await freed()
    if (used + adds > quota)
      throw new ApiError(
        'storage_quota_exceeded',
        `This import would bring the account to ${used + adds} bytes; the ${this.plans.get(account.rec.plan).id} plan allows ${quota}. Nothing was imported.`,
      )
  }

  /** Bytes the store counts for a key now (0 when missing). */
  async bytesOf(info: NamespaceInfo, key: string): Promise<number> {
    return (await this.stat(info, key))?.bytes ?? 0
  }

  /** What metadata adds to a namespace's bytes, as this store counts it. */
  metadataBytes(m: Buffer | undefined): number {
    return metadataBytes(m, this.store.supports.metadataOverhead)
  }

  /**
   * Refuses a write that would take the account past its plan's storage quota: `delta` is
   * what it adds. A write that adds nothing, or takes the account down, always goes. A total
   * kept from a moment ago (a shared store's) is counted again before it refuses anything.
   * Where the store keeps the account's total for every front end (StorageTotals), the write
   * is reserved against it beside every write under way; the function returned settles it
   * with what the write added (0: it failed).
   */
  private async checkQuota(
    account: Account,
    plan: Plan,
    quota: number,
    delta: number,
    what: string,
  ): Promise<(added: number) => void> {
    if (delta <= 0) return none
    const totals = this.store.storageTotals
    if (totals !== undefined) {
      const holder = `${FRONT}.${++reserved}`
      let got = await totals.reserve(account.id, holder, delta, quota)
      let used: number | undefined
      if (got !== 'ok') {
        // No total kept yet, or one that says no: counted afresh, it is set where that
        // cannot count a write under way twice (BASE), and asked again.
        used = await this.namespaces.storageBytes(account, true)
        if (await totals.base(account.id, used, got === 'over'))
          got = await totals.reserve(account.id, holder, delta, quota)
      }
      if (got === 'ok') return (added) => totals.settle(account.id, holder, added)
      used ??= await this.namespaces.storageBytes(account, true)
      // Writes under way elsewhere count too: the total said is at least past the quota.
      throw this.overQuota(account, plan, quota, Math.max(used + delta, quota + 1), what)
    }
    let used = await this.namespaces.storageBytes(account)
    if (used + delta > quota) used = await this.namespaces.storageBytes(account, true)
    if (used + delta > quota) throw this.overQuota(account, plan, quota, used + delta, what)
    return none
  }

  private overQuota(
    account: Account,
    plan: Plan,
    quota: number,
    total: number,
    what: string,
  ): ApiError {
    // The refusal stands whether or not its alert can be recorded, and does not wait for it.
    for (const fn of this.refusedHooks) Promise.resolve(fn(account, total)).catch(() => {})
    return new ApiError(
      'storage_quota_exceeded',
      `This ${what} would bring the account to ${total} bytes; the ${plan.id} plan allows ${quota}.`,
    )
  }

  /**
   * Deletes every key that begins with `prefix`, each as a write of its own (its own version
   * and watch event), a page at a time; resolves with how many went. Storage that refuses a
   * page after others went answers as it would, saying how many went: the request deleted
   * those, and sending it again deletes the rest.
   */
  async deletePrefix(info: NamespaceInfo, prefix: string): Promise<number> {
    let deleted = 0
    for (;;) {
      const page = await this.store.list(info.storeName, { prefix, limit: 1000 })
      if (page.keys.length === 0) return deleted
      const done = await this.store
        .transact(
          info.storeName,
          page.keys.map((key) => ({ op: 'delete' as const, key })),
        )
        .catch((err) => {
          const fault = deleted > 0 ? storageFault(err) : undefined
          if (fault === undefined) throw txFailure(err)
          throw new ApiError(
            fault.code,
            `${fault.message} ${deleted} keys with this prefix were deleted before the failure; the rest are still there, and sending the request again deletes them.`,
            fault.headers,
          )
        })
      for (const r of done.results) if ((r as { deleted?: boolean }).deleted) deleted++
      if (page.next === undefined) return deleted
    }
  }

  /**
   * PATCH of one key, for /v1 and the dashboard alike. One If-Match version goes to the
   * store as is; '*' or a list is settled against the key's current version, which the store
   * checks again at the moment of the write. If-None-Match is HTTP's, as on PUT and DELETE:
   * refused while the key (or that version) is there, with a check of the state seen ahead of
   * the change, so nothing slips between.
   */
  async patch(
    account: Account,
    info: NamespaceInfo,
    op: TxOp & { op: 'patch' },
    ifMatch: Tags | undefined,
    ifNoneMatch: Tags | undefined,
    plan: Plan = this.plans.get(account.rec.plan),
  ): Promise<{ version: number; value?: bigint; created?: boolean }> {
    const ops: TxOp[] = [op]
    if (ifMatch !== undefined) {
      const one = singleVersion(ifMatch)
      if (one !== undefined) op.ifVersion = one
      else {
        const v = (await this.get(info, op.key))?.version
        op.ifVersion = v !== undefined && matches(ifMatch, v) ? v : -1
      }
    }
    if (ifNoneMatch !== undefined) {
      const v = (await this.get(info, op.key))?.version
      if (matches(ifNoneMatch, v)) throw new ApiError('precondition_failed')
      ops.unshift({ op: 'check', key: op.key, version: v ?? null })
    }
    try {
      const done = await this.transact(account, info, ops, plan)
      return done.results[ops.length - 1] as { version: number; value?: bigint; created?: boolean }
    } catch (err) {
      // One op as the caller sees it: the error needs no index.
      if (err && typeof err === 'object') delete (err as { index?: number }).index
      throw err
    }
  }

  private async stat(info: NamespaceInfo, key: string) {
    try {
      return await this.store.stat(info.storeName, key)
    } catch (err) {
      throw isGone(err) ? new ApiError('namespace_not_found') : err
    }
  }
}
