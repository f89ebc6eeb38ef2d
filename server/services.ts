// Opening storage and building the services on it: shared by `cairn serve` and by the
// command line when it works on a stopped server's data directory.
import fs from 'node:fs'
import { open } from '../engine/index.js'
import type { Durability, Engine } from '../engine/types.js'
import { Accounts } from './accounts.js'
import { SessionStore } from './dashboard/sessions.js'
import { Data } from './data.js'
import { Namespaces } from './namespaces.js'
import type { PlanBook } from './plans.js'
import { ensureSystemNamespaces } from './system.js'
import { Usage } from './usage.js'

export interface Services {
  engine: Engine
  plans: PlanBook
  accounts: Accounts
  namespaces: Namespaces
  data: Data
  usage: Usage
  /** Dashboard sessions: held here so a password set from the command line ends them. */
  sessions: SessionStore
  deleteAccount(accountId: string): Promise<void>
}

export async function openServices(
  dataDir: string,
  durability: Durability,
  plans: PlanBook,
): Promise<Services> {
  fs.mkdirSync(dataDir, { recursive: true })
  const engine = await open(dataDir, { durability })
  try {
    await ensureSystemNamespaces(engine)
    const accounts = new Accounts(engine, plans)
    await accounts.load()
    const namespaces = new Namespaces(engine, accounts, plans)
    await namespaces.load()
    const usage = new Usage(engine, accounts, (a) => namespaces.storageBytes(a))
    await usage.load()
    const data = new Data(engine, namespaces, plans)
    const sessions = new SessionStore(engine)
    return {
      engine,
      plans,
      accounts,
      namespaces,
      data,
      usage,
      sessions,
      async deleteAccount(accountId) {
        const account = accounts.get(accountId)
        if (!account) return
        await namespaces.dropAll(account)
        await usage.forget(account)
        await accounts.remove(account)
        await sessions.destroyAccount(accountId)
      },
    }
  } catch (err) {
    await engine.close().catch(() => {})
    throw err
  }
}
