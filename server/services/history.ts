// Each namespace's history (the contract's "History and restore"): its window from its
// account's plan, reads at a point, a key's versions and restores. Both stores keep history
// (the engine's windows; Redis Cluster's, docs/redis.md "History"); a store without it would
// have the present as its only point: historyFrom now, a past point history_expired, and a
// key's versions its current one.
import type { Account, Accounts, NamespaceInfo } from './accounts.js'
import type { Namespaces } from './namespaces.js'
import type { PlanBook } from './plans.js'
import { ApiError } from '../wire/errors.js'
import { isGone, storeCode } from './store-errors.js'
import type {
  Entry,
  EntryVersion,
  HistoryPoint,
  ListOptions,
  Listed,
  Store,
} from '../store/types.js'

/** A store's refusal of a point as the API names it. */
function pointError(err: unknown): unknown {
  if (err instanceof ApiError) return err
  const message = (err as { message?: string } | null)?.message
  switch (storeCode(err)) {
    case 'HISTORY_EXPIRED':
      return new ApiError('history_expired', `${message}.`)
    case 'INVALID_POINT':
      return new ApiError('invalid_point', `The point is not valid: ${message}.`)
    default:
      return isGone(err) ? new ApiError('namespace_not_found') : err
  }
}

const iso = (ms: number) => new Date(ms).toISOString()

const APPLY_AT_ONCE = 32

export class History {
  /** The windows set at start: resolves to how many namespaces could not be set. */
  started: Promise<number> = Promise.resolve(0)

  constructor(
    private store: Store,
    private accounts: Accounts,
    namespaces: Namespaces,
    private plans: PlanBook,
  ) {
    accounts.onPlanChanged((account) => this.applyAccount(account))
    namespaces.onCreated((account, info) => this.apply(account, info))
  }

  /** Sets the window of one namespace from its account's plan. */
  async apply(account: Account, info: NamespaceInfo): Promise<void> {
    const h = this.store.history
    if (h === undefined) return
    const plan = this.plans.get(account.rec.plan)
    await h
      .setWindow(info.storeName, { seconds: plan.historySeconds, bytes: plan.historyBytes })
      .catch((err) => {
        if (!isGone(err)) throw err
      })
  }

  async applyAccount(account: Account): Promise<void> {
    for (const info of [...account.namespaces.values()]) await this.apply(account, info)
  }

  /**
   * Every namespace's window from its plan, as at start (and after the plans are reloaded).
   * A namespace whose window cannot be set now (its Redis master not answering) keeps the
   * one it had, which the store keeps, and does not stop the others: resolves to how many
   * were not set. Up to APPLY_AT_ONCE at a time, so one slow master costs about one timeout.
   */
  async applyAll(): Promise<number> {
    if (this.store.history === undefined) return 0
    let failed = 0
    const running = new Set<Promise<void>>()
    try {
      for await (const account of this.accounts.all())
        for (const info of [...account.namespaces.values()]) {
          const p: Promise<void> = this.apply(account, info).then(
            () => {
              running.delete(p)
            },
            () => {
              failed++
              running.delete(p)
            },
          )
          running.add(p)
          if (running.size >= APPLY_AT_ONCE) await Promise.race(running)
        }
    } catch {
      // The accounts could not all be read (a master not answering): those not reached keep
      // the windows they had.
      failed++
    }
    await Promise.all(running)
    return failed
  }

  /** The oldest readable point. */
  async from(info: NamespaceInfo): Promise<{ version: number; at: number }> {
    const h = this.store.history
    if (h !== undefined)
      return (await h.window(info.storeName).catch((e) => Promise.reject(pointError(e)))).from
    return { version: await this.store.feed.version(info.storeName), at: Date.now() }
  }

  /** Bytes the namespace's history holds. */
  async bytes(info: NamespaceInfo): Promise<number> {
    const h = this.store.history
    if (h === undefined) return 0
    return (await h.window(info.storeName).catch(() => ({ bytes: 0 }))).bytes
  }

  /** historyFrom as GET /namespaces gives it. */
  async fromText(info: NamespaceInfo): Promise<string> {
    // A namespace dropped meanwhile has no history: the present.
    return iso((await this.from(info).catch(() => ({ at: Date.now() }))).at)
  }

  /**
   * Where the store keeps no history: refuses every point but the present, and answers the
   * namespace's current version.
   */
  private async present(info: NamespaceInfo, point: HistoryPoint): Promise<number> {
    const now = Date.now()
    const current = await this.store.feed.version(info.storeName)
    if ('version' in point) {
      if (point.version > current)
        throw new ApiError(
          'invalid_point',
          `Version ${point.version} is above the namespace's ${current}.`,
        )
      if (point.version < current)
        throw new ApiError(
          'history_expired',
          `Version ${point.version} is older than the history, which begins at ${current}.`,
        )
      return current
    }
    if (point.at > now) throw new ApiError('invalid_point', 'The point is a time in the future.')
    if (point.at < now)
      throw new ApiError(
        'history_expired',
        `${iso(point.at)} is older than the history, which begins at ${iso(now)}.`,
      )
    return current
  }

  /** The point's version, or why it cannot be read (invalid_point, history_expired). */
  async versionOf(info: NamespaceInfo, point: HistoryPoint): Promise<number> {
    const h = this.store.history
    try {
      if (h === undefined) return await this.present(info, point)
      return (await h.listAt(info.storeName, { limit: 1 }, point)).version
    } catch (err) {
      throw pointError(err)
    }
  }

  async getAt(info: NamespaceInfo, key: string, point: HistoryPoint): Promise<Entry | undefined> {
    const h = this.store.history
    try {
      if (h !== undefined) return await h.getAt(info.storeName, key, point)
      await this.present(info, point)
      return await this.store.get(info.storeName, key)
    } catch (err) {
      throw pointError(err)
    }
  }

  async listAt(
    info: NamespaceInfo,
    o: ListOptions & { start?: string; end?: string },
    point: HistoryPoint,
  ): Promise<Listed> {
    const h = this.store.history
    try {
      if (h !== undefined) return await h.listAt(info.storeName, o, point)
      await this.present(info, point)
      return await this.store.list(info.storeName, { ...o, json: false })
    } catch (err) {
      throw pointError(err)
    }
  }

  /** The key's versions within the history, newest first, below `before` when given. */
  async versions(
    info: NamespaceInfo,
    key: string,
    o: { limit: number; before?: number },
  ): Promise<EntryVersion[]> {
    const h = this.store.history
    try {
      if (h !== undefined) return await h.versions(info.storeName, key, o)
      const e = await this.store.get(info.storeName, key)
      if (e === undefined || (o.before !== undefined && e.version >= o.before)) return []
      // The store keeps no commit times: the version is read as now.
      const v: EntryVersion = { version: e.version, at: Date.now(), value: e.value as Buffer }
      if (e.expiresAt !== undefined) v.expiresAt = e.expiresAt
      if (e.metadata !== undefined) v.metadata = e.metadata
      return [v]
    } catch (err) {
      throw pointError(err)
    }
  }
}
