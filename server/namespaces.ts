// An account's namespaces. Each is a store namespace (store/names.ts) plus a record of its
// creation. The record is written first and removed first: it claims the name against a
// concurrent create and counts against the plan's quota in one atomic step, and a
// namespace whose record is gone is no longer reachable while its entries are dropped.
// After a crash between the two steps the record says what exists (the embedded store
// reconciles at open; docs/redis.md says what Redis keeps).
import type { Account, Accounts, NamespaceInfo } from './accounts.js'
import { NAMESPACE_NAME } from './account-model.js'
import { ApiError } from './errors.js'
import type { PlanBook } from './plans.js'
import { userNamespace } from './store/names.js'
import type { Store } from './store/types.js'

export interface NamespaceRow {
  name: string
  keys: number
  bytes: number
  createdAt: string
}

const RESERVED = new Set(['namespaces', 'usage'])
/** The most namespaces any account may hold, whatever its plan says. */
const HARD_MAX = 10_000

export function validNamespaceName(name: unknown): name is string {
  return typeof name === 'string' && NAMESPACE_NAME.test(name) && !RESERVED.has(name)
}

export class Namespaces {
  private dropHooks: ((storeName: string) => void)[] = []

  constructor(
    private store: Store,
    private accounts: Accounts,
    private plans: PlanBook,
  ) {}

  /** Calls `fn` with the store name of each namespace dropped here (its watches end). */
  onDropped(fn: (storeName: string) => void): void {
    this.dropHooks.push(fn)
  }

  async row(info: NamespaceInfo): Promise<NamespaceRow> {
    const s = await this.store.namespaceCounts(info.storeName)
    return { name: info.name, keys: s?.keys ?? 0, bytes: s?.bytes ?? 0, createdAt: info.createdAt }
  }

  list(account: Account): Promise<NamespaceRow[]> {
    return Promise.all(
      [...account.namespaces.values()]
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
        .map((n) => this.row(n)),
    )
  }

  /** Bytes of keys plus values across the account's namespaces. */
  async storageBytes(account: Account): Promise<number> {
    let total = 0
    for (const n of account.namespaces.values())
      total += (await this.store.namespaceCounts(n.storeName))?.bytes ?? 0
    return total
  }

  async create(account: Account, name: unknown): Promise<NamespaceRow> {
    if (!validNamespaceName(name)) throw new ApiError('invalid_namespace')
    const exists = () =>
      new ApiError('namespace_exists', `A namespace named "${name}" already exists.`)
    if (account.namespaces.has(name)) throw exists()
    const max = this.plans.get(account.rec.plan).maxNamespaces
    const info: NamespaceInfo = {
      name,
      storeName: userNamespace(account.id, name),
      createdAt: new Date().toISOString(),
    }
    const made = await this.store.records.create(
      'namespace',
      `${account.id}/${name}`,
      { createdAt: info.createdAt },
      { maxInGroup: max ?? HARD_MAX },
    )
    if (made === 'exists') throw exists()
    if (made === 'full') {
      throw new ApiError(
        'namespace_quota_exceeded',
        `The ${account.rec.plan} plan allows ${max ?? HARD_MAX} namespaces.`,
      )
    }
    await this.store.createNamespace(info.storeName)
    account.namespaces.set(name, info)
    return { name, keys: 0, bytes: 0, createdAt: info.createdAt }
  }

  async drop(account: Account, name: string): Promise<boolean> {
    const info = await this.accounts.namespace(account, name)
    if (!info) return false
    account.namespaces.delete(name)
    const had = await this.store.records.delete('namespace', `${account.id}/${name}`)
    await this.store.dropNamespace(info.storeName)
    for (const fn of this.dropHooks) fn(info.storeName)
    return had
  }

  async dropAll(account: Account): Promise<void> {
    for (const name of [...account.namespaces.keys()]) await this.drop(account, name)
  }
}
