// Usage by the hour and by namespace over two Cairn front ends on one Redis Cluster: a known
// mix spread over both (test/helpers/usage-tally.ts) reads back exactly on each. Each front
// end adds its counts to the shared day record every pass (2 s by default, 250 ms in tests),
// and a report reads the record plus what is still pending where it is asked, so each front
// end shows the other's counts after at most one pass of the other's. The wait below is only
// a ceiling for a loaded machine: the test asserts the figures, not how soon they came.
import { isDeepStrictEqual } from 'node:util'
import t from 'tap'
import { plansFile } from '../helpers/plans.js'
import { clusterFor } from '../helpers/redis-cluster.js'
import { type TestServer, startServer } from '../helpers/server.js'
import {
  count,
  expected,
  expectedNamespaces,
  namespacesOf,
  newTally,
  sendMix,
  sumHours,
  withoutUsage,
} from '../helpers/usage-tally.js'
import { Client, sleep } from '../server/contract/http.js'
import { logIn } from '../helpers/dashboard-api.js'
import { Receiver, signedWith } from '../helpers/webhook-receiver.js'

const cluster = await clusterFor(t)
if (cluster) {
  const plans = plansFile(
    { id: 'tight', ratePerSecond: 1, burst: 60 },
    { id: 'tiny', requestsPerDay: 10 },
  )
  const receiver = new Receiver()
  await receiver.start()
  t.teardown(() => receiver.close())
  const start = () =>
    startServer({
      plans,
      args: ['--store', cluster.url, '--allow-private-webhooks'],
      env: { CAIRN_WEBHOOK_RETRY_MS: '300' },
    })
  const a: TestServer = await start()
  t.teardown(() => a.stop())
  const b: TestServer = await start()
  t.teardown(() => b.stop())

  t.test('both front ends report the same exact hours and namespaces', async (t) => {
    const made = await a.createAccount(undefined, { plan: 'tight' })
    const onA = new Client(a.baseUrl, made.apiKey)
    const onB = new Client(b.baseUrl, made.apiKey)
    const tally = newTally()
    await sendMix(tally, [onA, onB])
    let refused = 0
    for (let i = 0; i < 200 && refused < 4; i++) {
      const res = count(tally, await (i % 2 ? onB : onA).get('/a/k0'), 'get', 'a')
      if (res.status === 429) refused++
    }
    t.equal(refused, 4, 'the shared burst ran out')
    // Reports are requests too: refused ones (the burst is spent) count as rateLimited.
    const wanted = () => ({
      today: expected(tally),
      hours: expected(tally),
      namespaces: expectedNamespaces(tally, ['gone']),
    })
    for (const [name, c] of [
      ['A', onA],
      ['B', onB],
    ] as const) {
      let got: unknown
      let want = wanted()
      for (let tries = 0; tries < 60; tries++) {
        const res = count(tally, await c.get('/usage'), 'usage')
        want = wanted()
        if (res.status === 200) {
          got = {
            today: withoutUsage(res.json.today),
            hours: sumHours(res.json.hours),
            namespaces: namespacesOf(res.json.namespaces),
          }
          if (isDeepStrictEqual(got, want)) break
        }
        await sleep(500)
      }
      t.same(got, want, `front end ${name} reports every count of both, exactly`)
    }
  })

  t.test('a crossing seen by both front ends is delivered once', async (t) => {
    const password = 'correct horse battery'
    const made = await a.createAccount(undefined, { plan: 'tiny', password })
    const session = await logIn(b.url, made.email, password)
    const res = await fetch(`${b.url}/dashboard/api/notifications`, {
      method: 'PUT',
      headers: {
        origin: b.url,
        cookie: session.cookie!,
        'x-csrf-token': session.csrf,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ url: receiver.url }),
    })
    const secret = ((await res.json()) as any).webhook.secret
    const onA = new Client(a.baseUrl, made.apiKey)
    const onB = new Client(b.baseUrl, made.apiKey)
    // Past the quota on both: each front end sees 80% and 100% in its own passes.
    for (let i = 0; i < 16; i++) await (i % 2 ? onB : onA).get('/namespaces')
    const mine = (p: number) => (j: any) => j.account === made.accountId && j.percent === p
    await receiver.until(mine(80))
    await receiver.until(mine(100))
    for (let i = 0; i < 6; i++) await (i % 2 ? onB : onA).get('/namespaces')
    await sleep(2000)
    for (const p of [80, 100]) {
      const got = receiver.of(mine(p))
      t.equal(got.length, 1, `one delivery for ${p}% across both front ends`)
      t.ok(signedWith(got[0]!, secret), 'signed')
    }
  })
}
