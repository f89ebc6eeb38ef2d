// Opening storage and building the services on it: shared by `cairn serve` and by the
// command line when it works on storage itself (a stopped server's data directory, or a
// Redis Cluster whether or not front ends run on it).
import { Accounts } from './accounts.js'
import { SessionStore } from './sessions.js'
import { Data } from './data.js'
import { Namespaces } from './namespaces.js'
import type { PlanBook } from './plans.js'
import { openStore } from '../store/open.js'
import type { Durability, EngineTuning, Store } from '../store/types.js'
import { Usage } from './usage.js'

export interface Services {
  store: Store
  plans: PlanBook
  accounts: Accounts
  namespaces: Namespaces
  data: Data
  usage: Usage
  /** Dashboard sessions: held here so a password set from the command line ends them. */
  sessions: SessionStore
  deleteAccount(accountId: string): Promise<void>
}

/** Where storage is: a data directory (the embedded engine) or a `redis://` URL. */
export interface StoreLocation {
  dataDir: string
  store?: string
  durability: Durability
  engine?: EngineTuning
}

export async function openServices(where: StoreLocation, plans: PlanBook): Promise<Services> {
  const store = await openStore(where)
  try {
    return await servicesOn(store, plans)
  } catch (err) {
    await store.close().catch(() => {})
    throw err
  }
}

export async function servicesOn(store: Store, plans: PlanBook): Promise<Services> {
  const accounts = new Accounts(store, plans)
  await accounts.load()
  const namespaces = new Namespaces(store, accounts, plans)
  const usage = new Usage(store, accounts, (a) => namespaces.storageBytes(a))
  const data = new Data(store, accounts, namespaces, plans)
  const sessions = new SessionStore(store)
  return {
    store,
    plans,
    accounts,
    namespaces,
    data,
    usage,
    sessions,
    async deleteAccount(accountId) {
      const account = await accounts.get(accountId)
      if (!account) return
      // The account's removal is the commit: refused, nothing of the account is gone yet.
      // What follows is its data, which nobody can reach from then on; should the storage
      // refuse some of it, the embedded store drops what is left at its next open
      // (embedded-reconcile.ts), and a session record lapses with its week.
      await accounts.remove(account)
      await sessions.destroyAccount(accountId).catch(() => {})
      await namespaces.dropAll(account).catch(() => {})
      await usage.forget(account).catch(() => {})
    },
  }
}
