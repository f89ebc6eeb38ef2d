// The dashboard's data view takes from the account's token bucket as /v1 does: signed in to
// the dashboard, a script gets no more than it would with an API key. No browser needed.
import t from 'tap'
import { logIn } from '../helpers/dashboard-api.js'
import { plansFile } from '../helpers/plans.js'
import { startServer } from '../helpers/server.js'
import { Client } from '../server/contract/http.js'

const srv = await startServer({
  plans: plansFile({ id: 'slow', ratePerSecond: 1, burst: 5 }),
})
t.teardown(() => srv.stop())

t.test("the data view is held to the plan's rate limit", async (t) => {
  const acct = await srv.createAccount(undefined, { plan: 'slow', password: 'long enough pw' })
  await new Client(srv.baseUrl, acct.apiKey).createNamespace('n')
  const session = await logIn(srv.url, acct.email, 'long enough pw')
  t.equal(session.status, 200)
  const statuses: number[] = []
  let retryAfter: string | null = null
  for (let i = 0; i < 10; i++) {
    const res = await fetch(`${srv.url}/dashboard/api/namespaces/n/keys`, {
      headers: { cookie: session.cookie! },
    })
    statuses.push(res.status)
    if (res.status === 429) {
      retryAfter = res.headers.get('retry-after')
      t.equal(((await res.json()) as { error: { code: string } }).error.code, 'rate_limited')
    } else await res.arrayBuffer()
  }
  const ok = statuses.filter((s) => s === 200).length
  t.ok(ok >= 4 && ok <= 6, `about the burst of 5 got through (${statuses.join(',')})`)
  t.ok(Number(retryAfter) >= 1, 'the rest were told when to come back')
})
