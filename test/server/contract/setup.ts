// Starts a real server for one test file and gives it an account with a client.
import { startServer } from '../../helpers/server.js'
import { Client } from './http.js'

import { plansFile } from '../../helpers/plans.js'

export { plan, plansFile, type PlanFields } from '../../helpers/plans.js'

type Server = Awaited<ReturnType<typeof startServer>>

interface Tap {
  teardown(fn: () => unknown): void
}

export async function setup(
  t: Tap,
  opts: { plans?: object; args?: string[]; env?: Record<string, string>; testClock?: boolean } = {},
): Promise<{ srv: Server; api: Client; email: string; accountId: string }> {
  const srv = await startServer({
    plans: opts.plans ?? plansFile(),
    args: opts.args,
    env: opts.env,
    testClock: opts.testClock,
  })
  t.teardown(() => srv.stop())
  const acct = await srv.createAccount()
  return {
    srv,
    api: new Client(srv.baseUrl, acct.apiKey),
    email: acct.email,
    accountId: acct.accountId,
  }
}

/** A second account on the same server. */
export async function otherAccount(srv: Server, plan?: string): Promise<Client> {
  const acct = await srv.createAccount(undefined, plan ? { plan } : undefined)
  return new Client(srv.baseUrl, acct.apiKey)
}

let seq = 0
/** A fresh namespace name, created on the server. */
export async function freshNamespace(api: Client, stem = 'ns'): Promise<string> {
  const name = `${stem}${++seq}`
  await api.createNamespace(name)
  return name
}
