// Opening storage and building the services on it: shared by `cairn serve` and by the
// command line when it works on storage itself (a stopped server's data directory, or a
// Redis Cluster whether or not front ends run on it).
import { Accounts } from './accounts.js'
import { SessionStore } from './sessions.js'
import { Data } from './data.js'
import { History } from './history.js'
import { Namespaces } from './namespaces.js'
import type { PlanBook } from './plans.js'
import { openStore } from '../store/open.js'
import type { Durability, EngineTuning, Store } from '../store/types.js'
import { Usage } from './usage.js'
import { type Clock, wallClock } from './clock.js'
import { Alerts } from './alerts.js'
import { type WebhookOptions, Webhooks } from './webhooks.js'

/** How long a start on a shared store waits for the history windows to be set. */
const WINDOWS_WAIT_MS = 2000

export interface Services {
  store: Store
  /** What every time-based rule reads (clock.ts). */
  clock: Clock
  plans: PlanBook
  accounts: Accounts
  namespaces: Namespaces
  data: Data
  /** Each namespace's history window, reads at a point and restores. */
  history: History
  usage: Usage
  /** Dashboard sessions: held here so a password set from the command line ends them. */
  sessions: SessionStore
  /** Usage thresholds crossed, and the banner's figures. */
  alerts: Alerts
  /** Notification webhooks and their outbox (sent only where `cairn serve` starts it). */
  webhooks: Webhooks
  deleteAccount(accountId: string): Promise<void>
}

/** Where storage is: a data directory (the embedded engine) or a `redis://` URL. */
export interface StoreLocation {
  dataDir: string
  store?: string
  durability: Durability
  engine?: EngineTuning
  /** The embedded engine runs on the services' clock (Redis keeps its own time). */
  clock?: Clock
}

export async function openServices(
  where: StoreLocation,
  plans: PlanBook,
  webhookOptions?: WebhookOptions,
): Promise<Services> {
  const clock = where.clock ?? wallClock
  const store = await openStore({ ...where, clock })
  try {
    return await servicesOn(store, plans, webhookOptions, clock)
  } catch (err) {
    await store.close().catch(() => {})
    throw err
  }
}

export async function servicesOn(
  store: Store,
  plans: PlanBook,
  webhookOptions: WebhookOptions = { allowPrivate: false, retryMs: 30_000 },
  clock: Clock = wallClock,
): Promise<Services> {
  const accounts = new Accounts(store, plans)
  await accounts.load()
  const namespaces = new Namespaces(store, accounts, plans)
  const usage = new Usage(store, accounts, (a) => namespaces.storageBytes(a), clock)
  const data = new Data(store, accounts, namespaces, plans)
  const history = new History(store, accounts, namespaces, plans)
  // The engine sets its windows at once. A store other front ends share keeps them already
  // (set on each create and plan change), so a start brings only a plans file's changes, and
  // a master that does not answer must not hold the start: it waits WINDOWS_WAIT_MS at most.
  history.started = history.applyAll()
  if (store.supports.soleWriter) await history.started
  else
    await Promise.race([
      history.started,
      new Promise((resolve) => setTimeout(resolve, WINDOWS_WAIT_MS).unref()),
    ])
  const sessions = new SessionStore(store, clock)
  const webhooks = new Webhooks(store, accounts, webhookOptions)
  const alerts = new Alerts(store, accounts, plans, usage, namespaces, webhooks)
  usage.onPass((id, requests, bytes) => alerts.observe(id, requests, bytes))
  data.onStorageRefused((account, wouldBe) => alerts.refused(account, wouldBe))
  return {
    store,
    clock,
    plans,
    accounts,
    namespaces,
    data,
    history,
    usage,
    sessions,
    alerts,
    webhooks,
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
      await alerts.forget(accountId).catch(() => {})
      await webhooks.forget(accountId).catch(() => {})
    },
  }
}
