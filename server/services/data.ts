// Reading and writing an account's entries: the rules /v1 and the dashboard's data browser
// share (namespace lookup, conditional writes, the storage quota, TTLs), over the store.
import type { Account, Accounts, NamespaceInfo } from './accounts.js'
import { ApiError, opError } from '../wire/errors.js'
import type { Namespaces } from './namespaces.js'
import type { PlanBook } from './plans.js'
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
  const e = err as { code?: string; index?: number }
  if (e.index === undefined) return isGone(err) ? new ApiError('namespace_not_found') : err
  if (e.code === 'CONFLICT') return opError('precondition_failed', e.index)
  if (e.code === 'NOT_A_NUMBER') return opError('not_a_number', e.index)
  if (e.code === 'VALUE_TOO_LARGE')
    return opError(
      'value_too_large',
      e.index,
      'The increment would make the value larger than the plan allows.',
    )
  if (e.code === 'KEY_NOT_FOUND')
    return opError('key_not_found', e.index, 'There is no such key in this namespace.')
  return err
}

/** What metadata adds to a namespace's bytes as the store counts them (Store.metadataOverhead). */
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

const isConflict = (err: unknown) => (err as { code?: string }).code === 'CONFLICT'
const isGone = (err: unknown) => (err as { code?: string }).code === 'NAMESPACE_NOT_FOUND'

function present(info: NamespaceInfo | undefined, name: string): NamespaceInfo {
  if (info === undefined)
    throw new ApiError('namespace_not_found', `There is no namespace "${name}".`)
  return info
}

export class Data {
  /** Whether the store answers reads synchronously (getNow). */
  readonly readsNow: boolean

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
  ): Promise<Written> {
    const plan = this.plans.get(account.rec.plan)
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
    const md = metadataBytes(o.metadata, this.store.metadataOverhead)
    const delta = Buffer.byteLength(key) + json.length + md - oldBytes
    if (quota !== null) await this.checkQuota(account, quota, delta, 'write')
    try {
      const done = await this.store.put(info.storeName, key, json, {
        ttlMs: o.ttl !== undefined ? o.ttl * 1000 : undefined,
        expiresAt: o.expiresAt !== undefined ? o.expiresAt * 1000 : undefined,
        ifVersion,
        metadata: o.metadata,
      })
      if (quota !== null) this.namespaces.wrote(account, delta)
      return done
    } catch (err) {
      if (isConflict(err)) throw new ApiError('precondition_failed')
      if (isGone(err)) throw new ApiError('namespace_not_found')
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
  async transact(account: Account, info: NamespaceInfo, ops: TxOp[]): Promise<Transacted> {
    const plan = this.plans.get(account.rec.plan)
    // An increment's result is a value like any other: at most the plan's largest.
    if (plan.maxValueBytes !== null)
      for (const op of ops)
        if (op.op === 'increment' || (op.op === 'patch' && op.by !== undefined))
          op.maxBytes = plan.maxValueBytes
    const quota = plan.maxStorageBytes
    if (quota !== null) {
      const adds = ops.reduce((sum, op) => sum + mostAdded(op, this.store.metadataOverhead), 0)
      const what = ops.some((op) => op.op === 'patch') ? 'change' : 'transaction'
      if (adds > 0) await this.checkQuota(account, quota, adds, what)
    }
    try {
      const done = await this.store.transact(info.storeName, ops)
      if (quota !== null) this.namespaces.wrote(account)
      return done
    } catch (err) {
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
    return metadataBytes(m, this.store.metadataOverhead)
  }

  /**
   * Refuses a write that would take the account past its plan's storage quota: `delta` is
   * what it adds. A write that adds nothing, or takes the account down, always goes. A total
   * kept from a moment ago (a shared store's) is counted again before it refuses anything.
   */
  private async checkQuota(account: Account, quota: number, delta: number, what: string) {
    if (delta <= 0) return
    let used = await this.namespaces.storageBytes(account)
    if (used + delta > quota) used = await this.namespaces.storageBytes(account, true)
    if (used + delta > quota) {
      throw new ApiError(
        'storage_quota_exceeded',
        `This ${what} would bring the account to ${used + delta} bytes; the ${this.plans.get(account.rec.plan).id} plan allows ${quota}.`,
      )
    }
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

  private async stat(info: NamespaceInfo, key: string) {
    try {
      return await this.store.stat(info.storeName, key)
    } catch (err) {
      throw isGone(err) ? new ApiError('namespace_not_found') : err
    }
  }
}
