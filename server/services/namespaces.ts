// An account's namespaces. Each is a store namespace (store/names.ts) plus a record of its
// creation, and exists while both do. The record is written first: it claims the name
// against a concurrent create and counts against the plan's quota in one atomic step. It is
// removed last, after the store's namespace, so a drop the store refuses changes nothing.
// A record whose store namespace is missing is a leftover, of a create that failed (or
// crashed) between the two steps or a drop that could not remove its record: a create of
// the name takes it over, and the embedded store removes it at open (docs/redis.md says
// what Redis keeps).
import { LRUCache } from 'lru-cache'
import type { Account, Accounts, NamespaceInfo } from './accounts.js'
import { NAMESPACE_NAME } from './account-model.js'
import { ApiError } from '../wire/errors.js'
import type { PlanBook } from './plans.js'
import { userNamespace } from '../store/names.js'
import { within } from '../store/within.js'
import type { Store } from '../store/types.js'
import { Claims } from './claims.js'

export interface NamespaceRow {
  name: string
  keys: number
  bytes: number
  createdAt: string
}

const RESERVED = new Set(['namespaces', 'usage'])
/**
 * On a shared store, how long an account's storage total is trusted before its namespaces
 * are counted again: summing them is a read per namespace, on every master that holds one.
 */
const TOTAL_MS = 1000
/** Accounts (totals) and namespaces (last counts) remembered for the storage quota. */
const REMEMBERED = 100_000
/**
 * How long a namespace counted before is waited for before its last count stands in: a
 * master that stalls or fails over would otherwise hold every write of its accounts,
 * wherever the written namespace lives, until its commands time out.
 */
const COUNT_WAIT_MS = 250
/** The most namespaces any account may hold, whatever its plan says. */
const HARD_MAX = 10_000
/**
 * On a shared store, how old a record without its namespace must be to count as left over:
 * a younger one may be another front end's create between its two steps.
 */
const LEFTOVER_MS = 60_000

export function validNamespaceName(name: unknown): name is string {
  return typeof name === 'string' && NAMESPACE_NAME.test(name) && !RESERVED.has(name)
}

export class Namespaces {
  private dropHooks: ((storeName: string) => void)[] = []
  /** Shared stores: each account's storage total, and when it was counted. */
  private totals = new LRUCache<string, { bytes: number; at: number }>({ max: REMEMBERED })
  /** Shared stores: each namespace's last count, for when its master does not answer. */
  private counted = new LRUCache<string, number>({ max: REMEMBERED })

  constructor(
    private store: Store,
    private accounts: Accounts,
    private plans: PlanBook,
  ) {}

  private createHooks: ((account: Account, info: NamespaceInfo) => Promise<void>)[] = []

  /** Calls `fn` with each namespace made here, before its create is answered. */
  onCreated(fn: (account: Account, info: NamespaceInfo) => Promise<void>): void {
    this.createHooks.push(fn)
  }

  /** Calls `fn` with the store name of each namespace dropped here (its watches end). */
  onDropped(fn: (storeName: string) => void): void {
    this.dropHooks.push(fn)
  }

  async row(info: NamespaceInfo): Promise<NamespaceRow> {
    const s = await this.store.namespaceCounts(info.storeName)
    return { name: info.name, keys: s?.keys ?? 0, bytes: s?.bytes ?? 0, createdAt: info.createdAt }
  }

  async list(account: Account): Promise<NamespaceRow[]> {
    if (!this.store.supports.soleWriter) await this.accounts.readNamespaces(account)
    return Promise.all(
      [...account.namespaces.values()]
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
        .map((n) => this.row(n)),
    )
  }

  /**
   * Bytes of keys plus values across the account's namespaces, for the storage quota. The
   * namespaces are counted together. On a shared store the total is kept for TOTAL_MS and
   * moved by this front end's own writes (wrote), so a write costs no read per namespace;
   * `fresh` counts again (a refusal is always confirmed so). A namespace whose master does
   * not answer (at once, or within COUNT_WAIT_MS) counts as it last did: the quota does not
   * make writes elsewhere fail or wait.
   */
  async storageBytes(account: Account, fresh = false): Promise<number> {
    const shared = !this.store.supports.soleWriter
    const kept = shared && !fresh ? this.totals.get(account.id) : undefined
    if (kept !== undefined && Date.now() - kept.at < TOTAL_MS) return kept.bytes
    const at = Date.now()
    const counts = await Promise.all(
      [...account.namespaces.values()].map((n) => this.bytesOf(n.storeName, shared)),
    )
    const total = counts.reduce((sum: number, n) => sum + (n ?? 0), 0)
    // A total with a namespace this process never counted standing in as 0 is not kept: the
    // next write asks again.
    if (shared && !counts.includes(undefined)) this.totals.set(account.id, { bytes: total, at })
    return total
  }

  /**
   * A namespace's bytes. On a shared store its last count stands in for a slow or failing
   * master, and undefined (counted as 0) where this process never counted it: a front end
   * just started, or new to the account, must not fail the account's writes on every other
   * master for one it cannot reach. The quota may be passed by as much meanwhile.
   */
  private bytesOf(ns: string, shared: boolean): Promise<number | undefined> {
    const asked = this.store.namespaceCounts(ns).then((c) => {
      if (shared) this.counted.set(ns, c?.bytes ?? 0)
      return c?.bytes ?? 0
    })
    if (!shared) return asked
    return within(asked, COUNT_WAIT_MS, this.counted.get(ns))
  }

  /** A write here changed the account's bytes by `delta`; undefined: by an amount not known. */
  wrote(account: Account, delta?: number): void {
    const kept = this.totals.get(account.id)
    if (kept === undefined) return
    if (delta === undefined) this.totals.delete(account.id)
    else kept.bytes += delta
  }

  async create(account: Account, name: unknown): Promise<NamespaceRow> {
    if (!validNamespaceName(name)) throw new ApiError('invalid_namespace')
    const exists = () =>
      new ApiError('namespace_exists', `A namespace named "${name}" already exists.`)
    // Only where this process is the only writer is the snapshot sure to be current: on a
    // shared store another front end may have dropped it, and the record's create decides.
    if (this.store.supports.soleWriter && account.namespaces.has(name)) throw exists()
    const id = `${account.id}/${name}`
    return this.creating.hold(id, exists, () => this.createNew(account, name, id, exists))
  }

  /** Names whose create is under way in this process (a leftover check must not take them). */
  private creating = new Claims()

  private async createNew(
    account: Account,
    name: string,
    id: string,
    exists: () => ApiError,
  ): Promise<NamespaceRow> {
    const max = this.plans.get(account.rec.plan).maxNamespaces
    const info: NamespaceInfo = {
      name,
      storeName: userNamespace(account.id, name),
      createdAt: new Date().toISOString(),
    }
    const made = await this.store.records
      .create('namespace', id, { createdAt: info.createdAt }, { maxInGroup: max ?? HARD_MAX })
      .catch(async (err) => {
        // Applied with its answer lost (a shared store): the record is ours, go on.
        const rec = await this.store.records
          .get<{ createdAt: string }>('namespace', id)
          .catch(() => undefined)
        if (rec?.createdAt === info.createdAt) return 'created' as const
        throw err
      })
    if (made === 'exists') {
      if (!(await this.leftover(id, info.storeName))) throw exists()
      await this.store.records.put('namespace', id, { createdAt: info.createdAt })
    } else if (made === 'full') {
      throw new ApiError(
        'namespace_quota_exceeded',
        `The ${account.rec.plan} plan allows ${max ?? HARD_MAX} namespaces.`,
      )
    }
    try {
      await this.store.createNamespace(info.storeName)
    } catch (err) {
      // Let the name go, or a retry would be told it exists. Should the store refuse this
      // too, the record is a leftover, which the retry takes over.
      await this.store.records.delete('namespace', id).catch(() => {})
      throw err
    }
    account.namespaces.set(name, info)
    for (const fn of this.createHooks) await fn(account, info)
    return { name, keys: 0, bytes: 0, createdAt: info.createdAt }
  }

  /** Whether a namespace record is a leftover: its store namespace is missing (see above). */
  private async leftover(id: string, storeName: string): Promise<boolean> {
    if ((await this.store.namespaceCounts(storeName)) !== undefined) return false
    if (this.store.supports.soleWriter) return true
    const rec = await this.store.records.get<{ createdAt: string }>('namespace', id)
    return rec !== undefined && Date.now() - Date.parse(rec.createdAt) > LEFTOVER_MS
  }

  async drop(account: Account, name: string): Promise<boolean> {
    const info = await this.accounts.namespace(account, name)
    if (!info) return false
    const had = await this.store.dropNamespace(info.storeName)
    account.namespaces.delete(name)
    for (const fn of this.dropHooks) fn(info.storeName)
    // The drop has happened once the store's namespace is gone; a record the store will not
    // remove now is a leftover (see above).
    const recorded = await this.store.records
      .delete('namespace', `${account.id}/${name}`)
      .catch((err) => {
        if (had) return true
        throw err
      })
    return had || recorded
  }

  async dropAll(account: Account): Promise<void> {
    for (const name of [...account.namespaces.keys()]) await this.drop(account, name)
  }
}
