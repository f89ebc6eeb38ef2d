// An account's namespaces. Each is an engine namespace named `u/<account>/<name>`, plus a
// record of its creation in sys/namespaces. The record is written before the engine
// namespace is made and removed before it is dropped, so after a crash between the two the
// record says what exists: `load` makes a missing engine namespace and drops an orphan one.
import type { Engine } from '../engine/types.js'
import { type Account, type Accounts, NAMESPACE_NAME, type NamespaceInfo } from './accounts.js'
import { ApiError } from './errors.js'
import type { PlanBook } from './plans.js'
import { SYS, USER_PREFIX, entries, userNamespace } from './system.js'

export interface NamespaceRow {
  name: string
  keys: number
  bytes: number
  createdAt: string
}

const RESERVED = new Set(['namespaces', 'usage'])

export function validNamespaceName(name: unknown): name is string {
  return typeof name === 'string' && NAMESPACE_NAME.test(name) && !RESERVED.has(name)
}

export class Namespaces {
  constructor(
    private engine: Engine,
    private accounts: Accounts,
    private plans: PlanBook,
  ) {}

  async load(): Promise<void> {
    const known = new Set<string>()
    for await (const [id, rec] of entries<{ createdAt: string }>(this.engine, SYS.namespaces)) {
      const slash = id.indexOf('/')
      const account = this.accounts.get(id.slice(0, slash))
      const name = id.slice(slash + 1)
      if (!account) {
        await this.engine.delete(SYS.namespaces, id)
        continue
      }
      const engineName = userNamespace(account.id, name)
      if (!this.engine.hasNamespace(engineName)) await this.engine.createNamespace(engineName)
      account.namespaces.set(name, { name, engineName, createdAt: rec.createdAt })
      known.add(engineName)
    }
    for (const n of this.engine.namespaces()) {
      if (n.name.startsWith(USER_PREFIX) && !known.has(n.name))
        await this.engine.dropNamespace(n.name)
    }
  }

  row(info: NamespaceInfo): NamespaceRow {
    const s = this.engine.namespaceStats(info.engineName)
    return { name: info.name, keys: s?.keys ?? 0, bytes: s?.bytes ?? 0, createdAt: info.createdAt }
  }

  list(account: Account): NamespaceRow[] {
    return [...account.namespaces.values()]
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .map((n) => this.row(n))
  }

  /** Bytes of keys plus values across the account's namespaces. */
  storageBytes(account: Account): number {
    let total = 0
    for (const n of account.namespaces.values())
      total += this.engine.namespaceStats(n.engineName)?.bytes ?? 0
    return total
  }

  async create(account: Account, name: unknown): Promise<NamespaceRow> {
    if (!validNamespaceName(name)) throw new ApiError('invalid_namespace')
    if (account.namespaces.has(name))
      throw new ApiError('namespace_exists', `A namespace named "${name}" already exists.`)
    const max = this.plans.get(account.rec.plan).maxNamespaces
    if (max !== null && account.namespaces.size >= max) {
      throw new ApiError(
        'namespace_quota_exceeded',
        `The ${account.rec.plan} plan allows ${max} namespaces.`,
      )
    }
    const info: NamespaceInfo = {
      name,
      engineName: userNamespace(account.id, name),
      createdAt: new Date().toISOString(),
    }
    // Claimed in memory first, so a concurrent create of the same name is refused at once.
    account.namespaces.set(name, info)
    try {
      await this.engine.put(SYS.namespaces, `${account.id}/${name}`, { createdAt: info.createdAt })
      await this.engine.createNamespace(info.engineName)
    } catch (err) {
      account.namespaces.delete(name)
      throw err
    }
    return { name, keys: 0, bytes: 0, createdAt: info.createdAt }
  }

  async drop(account: Account, name: string): Promise<boolean> {
    const info = account.namespaces.get(name)
    if (!info) return false
    account.namespaces.delete(name)
    await this.engine.delete(SYS.namespaces, `${account.id}/${name}`)
    await this.engine.dropNamespace(info.engineName)
    return true
  }

  async dropAll(account: Account): Promise<void> {
    for (const name of [...account.namespaces.keys()]) await this.drop(account, name)
  }
}
