// The test clock on a real server (CAIRN_TEST_CLOCK, docs/configuration.md): rate limits and
// sessions read the one clock the operator moves, and a server on the wall clock has none to
// move. (The TTL and usage-hours contract tests and the client's methods run on it too.)
import t from 'tap'
import { logIn } from '../helpers/dashboard-api.js'
import { plan } from '../helpers/plans.js'
import { startServer } from '../helpers/server.js'
import { Client } from './contract/http.js'

const WEEK_MS = 7 * 24 * 3600_000
const PASSWORD = 'correct horse battery staple'
const plans = {
  plans: [plan({ id: 'free' }), plan({ id: 'tight', ratePerSecond: 2, burst: 5 })],
  default: 'free',
  upgradeUrl: null,
}

t.test('a server on the wall clock refuses clock.advance', async (t) => {
  const srv = await startServer()
  t.teardown(() => srv.stop())
  t.equal(srv.onTestClock, false)
  await t.rejects(srv.operator('clock.advance', { ms: 1000 }), /400 .*not_supported/)
})

t.test('on the test clock', async (t) => {
  const srv = await startServer({ plans, testClock: true })
  t.teardown(() => srv.stop())
  t.equal(srv.onTestClock, true)
  const start = await srv.now()
  await new Promise((r) => setTimeout(r, 50))
  t.equal(await srv.now(), start, 'time stands still')
  await t.rejects(srv.operator('clock.advance', { ms: -5 }), /400 .*invalid_request/)

  t.test('a burst is spent, and a second gives back exactly its tokens', async (t) => {
    const made = await srv.createAccount(undefined, { plan: 'tight' })
    const api = new Client(srv.baseUrl, made.apiKey)
    const statuses: number[] = []
    // However slowly these go, no token comes back meanwhile.
    for (let i = 0; i < 8; i++) statuses.push((await api.get('/usage')).status)
    t.same(statuses, [200, 200, 200, 200, 200, 429, 429, 429], 'the burst of 5, then 429')
    await srv.passTime(1000)
    const after: number[] = []
    for (let i = 0; i < 3; i++) after.push((await api.get('/usage')).status)
    t.same(after, [200, 200, 429], 'a second later: 2 more, at 2 a second')
  })

  t.test("a session ends when its week has passed on the server's clock", async (t) => {
    const made = await srv.createAccount(undefined, { password: PASSWORD })
    const s = await logIn(srv.url, made.email, PASSWORD)
    t.equal(s.status, 200)
    const me = () =>
      fetch(`${srv.url}/dashboard/api/me`, { headers: { cookie: s.cookie! } }).then((r) => r.status)
    t.equal(await me(), 200, 'signed in')
    await srv.passTime(WEEK_MS - 60_000)
    t.equal(await me(), 200, 'a minute before the week is out: still signed in')
    await srv.passTime(60_000)
    t.equal(await me(), 401, 'the week out: signed out')
  })
})
