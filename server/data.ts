// Reading and writing an account's entries: the rules /v1 and the dashboard's data browser
// share (namespace lookup, conditional writes, the storage quota, TTLs), over the engine's
// public API only.
import type { Engine, GetResult, ListResult, PutResult } from '../engine/types.js'
import type { Account, NamespaceInfo } from './accounts.js'
import { ApiError } from './errors.js'
import type { Namespaces } from './namespaces.js'
import type { PlanBook } from './plans.js'
import { type Tags, matches, singleVersion } from './v1/conditions.js'

export interface WriteOptions {
  /** Seconds from now. */
  ttl?: number
  /** Unix seconds. */
  expiresAt?: number
  ifMatch?: Tags
  ifNoneMatch?: Tags
}

const isConflict = (err: unknown) => (err as { code?: string }).code === 'CONFLICT'
const isGone = (err: unknown) => (err as { code?: string }).code === 'NAMESPACE_NOT_FOUND'

export class Data {
  /** Whether the engine answers reads synchronously (getNow). */
  readonly readsNow: boolean

  constructor(
    private engine: Engine,
    private namespaces: Namespaces,
    private plans: PlanBook,
  ) {
    this.readsNow = engine.getNow !== undefined
  }

  namespace(account: Account, name: string): NamespaceInfo {
    const info = account.namespaces.get(name)
    if (info === undefined)
      throw new ApiError('namespace_not_found', `There is no namespace "${name}".`)
    return info
  }

  getNow(info: NamespaceInfo, key: string): GetResult | undefined {
    return this.engine.getNow!(info.engineName, key)
  }

  /** The engine's own promise: a namespace dropped meanwhile rejects with NAMESPACE_NOT_FOUND. */
  get(info: NamespaceInfo, key: string): Promise<GetResult | undefined> {
    return this.engine.get(info.engineName, key)
  }

  async put(
    account: Account,
    info: NamespaceInfo,
    key: string,
    json: Buffer,
    o: WriteOptions,
  ): Promise<PutResult> {
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
      // The engine checks again at the moment of the write, so nothing can slip in between.
      if (o.ifMatch !== undefined || o.ifNoneMatch !== undefined) ifVersion = v ?? null
    } else if (fast !== undefined) ifVersion = fast
    else if (o.ifNoneMatch === '*') ifVersion = null
    if (quota !== null) {
      const used = this.namespaces.storageBytes(account)
      const next = used - oldBytes + Buffer.byteLength(key) + json.length
      if (next > quota && next > used) {
        throw new ApiError(
          'storage_quota_exceeded',
          `This write would bring the account to ${next} bytes; the ${plan.id} plan allows ${quota}.`,
        )
      }
    }
    try {
      return await this.engine.put(info.engineName, key, json, {
        ttlMs: o.ttl !== undefined ? o.ttl * 1000 : undefined,
        expiresAt: o.expiresAt !== undefined ? o.expiresAt * 1000 : undefined,
        ifVersion,
      })
    } catch (err) {
      if (isConflict(err)) throw new ApiError('precondition_failed')
      if (isGone(err)) throw new ApiError('namespace_not_found')
      throw err
    }
  }

  /** true when a key was deleted, false when there was none; ApiError on a failed condition. */
  async delete(info: NamespaceInfo, key: string, ifMatch?: Tags): Promise<boolean> {
    let ifVersion: number | undefined
    if (ifMatch !== undefined) {
      const fast = singleVersion(ifMatch)
      if (fast !== undefined) ifVersion = fast
      else {
        const cur = await this.stat(info, key)
        if (!matches(ifMatch, cur?.version)) throw new ApiError('precondition_failed')
        ifVersion = cur!.version
      }
    }
    try {
      return await this.engine.delete(
        info.engineName,
        key,
        ifVersion === undefined ? undefined : { ifVersion },
      )
    } catch (err) {
      if (isConflict(err)) throw new ApiError('precondition_failed')
      if (isGone(err)) throw new ApiError('namespace_not_found')
      throw err
    }
  }

  list(
    info: NamespaceInfo,
    prefix: string,
    after: string | undefined,
    limit: number,
  ): Promise<ListResult> {
    return this.engine.list(info.engineName, { prefix, after, limit })
  }

  private async stat(info: NamespaceInfo, key: string) {
    try {
      return await this.engine.stat(info.engineName, key)
    } catch (err) {
      throw isGone(err) ? new ApiError('namespace_not_found') : err
    }
  }
}
