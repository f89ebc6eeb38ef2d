// Usage alerts and the notification webhook, with a real receiver on loopback (so the server
// runs with --allow-private-webhooks, and retries every few hundred ms: CAIRN_WEBHOOK_RETRY_MS).
// Exactly one signed delivery per crossing; a retry after a 500 with the same body; none lost
// across a restart; none to loopback without the flag, at save or at send. backends.test.ts
// runs this file again on Redis Cluster.
import t from 'tap'
import { logIn } from '../../helpers/dashboard-api.js'
import { plan } from '../../helpers/plans.js'
import { type TestServer, startServer } from '../../helpers/server.js'
import { Receiver, signedWith } from '../../helpers/webhook-receiver.js'
import { Client, sleep } from './http.js'

const PASSWORD = 'correct horse battery'
const plans = {
  plans: [
    plan({ id: 'free', name: 'Free' }),
    plan({ id: 'tiny', requestsPerDay: 10, maxStorageBytes: 1000 }),
    plan({ id: 'small', maxStorageBytes: 1000 }),
  ],
  default: 'free',
  upgradeUrl: null,
}
const env = { CAIRN_WEBHOOK_RETRY_MS: '300' }
const allowed = ['--allow-private-webhooks']

const receiver = new Receiver()
await receiver.start()
t.teardown(() => receiver.close())

async function serverWith(args: string[], dataDir?: string): Promise<TestServer> {
  const srv = await startServer({ plans, args, env, dataDir })
  t.teardown(() => srv.stop())
  return srv
}

/** A new account on the tiny plan, signed in to the dashboard; `dash` calls its API. */
async function account(srv: TestServer, planId = 'tiny') {
  const made = await srv.createAccount(undefined, { plan: planId, password: PASSWORD })
  const session = await logIn(srv.url, made.email, PASSWORD)
  const dash = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${srv.url}/dashboard/api${path}`, {
      method,
      headers: {
        origin: srv.url,
        cookie: session.cookie!,
        'x-csrf-token': session.csrf,
        'content-type': 'application/json',
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    return { status: res.status, body: (await res.json()) as any }
  }
  return { ...made, api: new Client(srv.baseUrl, made.apiKey), dash }
}

const srv = await serverWith(allowed)

t.test('one signed delivery per crossing of the daily quota and of storage', async (t) => {
  const a = await account(srv)
  const saved = await a.dash('PUT', '/notifications', { url: receiver.url })
  t.equal(saved.status, 200)
  const secret: string = saved.body.webhook.secret
  t.match(secret, /^whsec_/)
  const shown = await a.dash('GET', '/notifications')
  t.same(
    Object.keys(shown.body.webhook).sort(),
    ['createdAt', 'url'],
    'the secret is not shown again',
  )
  const mine = (metric: string, percent: number) => (j: any) =>
    j.account === a.accountId && j.metric === metric && j.percent === percent

  // Storage: 1000 bytes allowed. 850 stored is past 80%; a write past 1000 is refused: 100%.
  await a.api.createNamespace('s')
  t.equal((await a.api.put('/s/big', { value: 'x'.repeat(845) })).status, 201)
  const [s80] = await receiver.until(mine('storage', 80))
  t.equal((await a.api.put('/s/more', { value: 'y'.repeat(300) })).status, 403)
  const [s100] = await receiver.until(mine('storage', 100))
  // Requests: 10 a day. Three made so far (the refused write counts); five more is 80%,
  // two more 100%, the rest 429s.
  for (let i = 0; i < 5; i++) await a.api.get('/s/big')
  const [r80] = await receiver.until(mine('requests', 80))
  for (let i = 0; i < 6; i++) await a.api.get('/s/big')
  const [r100] = await receiver.until(mine('requests', 100))

  for (const d of [s80!, s100!, r80!, r100!]) {
    t.ok(signedWith(d, secret), `${d.json.metric} ${d.json.percent}%: signed with the secret`)
    t.equal(d.headers['content-type'], 'application/json')
    t.same(Object.keys(d.json).sort(), [
      'account',
      'at',
      'limit',
      'metric',
      'percent',
      'type',
      'value',
    ])
    t.equal(d.json.type, 'usage.threshold')
    t.ok(!Number.isNaN(Date.parse(d.json.at)))
  }
  t.match(s80!.json, { limit: 1000 })
  t.ok(s80!.json.value >= 800, `storage value ${s80!.json.value}`)
  t.match(r80!.json, { limit: 10, value: 8 })
  t.ok(r100!.json.value >= 10)

  // More passes, more requests past the quota, more refused writes: nothing is sent again.
  await a.api.put('/s/more', { value: 'y'.repeat(300) })
  await sleep(2000)
  for (const [metric, p] of [
    ['storage', 80],
    ['storage', 100],
    ['requests', 80],
    ['requests', 100],
  ] as const)
    t.equal(receiver.of(mine(metric, p)).length, 1, `exactly one delivery for ${metric} ${p}%`)

  // While they hold, the dashboard's banner has them.
  const alerts = (await a.dash('GET', '/alerts')).body.alerts
  t.same(
    alerts.map((x: any) => [x.metric, x.percent]),
    [
      ['requests', 100],
      ['storage', 100],
    ],
  )
})

t.test('storage alerts again only after the account fell below 70%', async (t) => {
  const a = await account(srv, 'small')
  await a.dash('PUT', '/notifications', { url: receiver.url })
  const mine = (p: number) => (j: any) =>
    j.account === a.accountId && j.metric === 'storage' && j.percent === p
  await a.api.createNamespace('s')
  t.equal((await a.api.put('/s/a', { value: 'x'.repeat(845) })).status, 201) // 850 bytes
  await receiver.until(mine(80))
  // Down to 75%: still above 70%, so back up to 85% is no new crossing.
  t.equal((await a.api.put('/s/a', { value: 'x'.repeat(745) })).status, 200)
  await sleep(1000)
  t.equal((await a.api.put('/s/a', { value: 'x'.repeat(845) })).status, 200)
  await sleep(1000)
  t.equal(receiver.of(mine(80)).length, 1, 'no new alert without falling below 70%')
  // Down to 10%, a pass sees it (the request itself), then up again: a new crossing.
  t.equal((await a.api.put('/s/a', { value: 'x'.repeat(95) })).status, 200)
  await sleep(1000)
  await a.api.get('/s/a')
  await sleep(1000)
  t.equal((await a.api.put('/s/a', { value: 'x'.repeat(845) })).status, 200)
  const again = await receiver.until(mine(80), 2)
  t.equal(again.length, 2, 'alerted again after falling below 70%')
  t.equal(receiver.of(mine(100)).length, 0, 'never at 100%')
})

t.test('a delivery answered 500 is sent again, the same bytes', async (t) => {
  const a = await account(srv)
  const secret = (await a.dash('PUT', '/notifications', { url: receiver.url })).body.webhook.secret
  receiver.queue.push(500)
  t.equal((await a.dash('POST', '/notifications/test')).status, 202)
  const both = await receiver.until(
    (j) => j.type === 'webhook.test' && j.account === a.accountId,
    2,
  )
  t.same(
    both.map((d) => d.answered),
    [500, 200],
  )
  t.equal(both[1]!.body, both[0]!.body, 'the same body')
  t.ok(
    both.every((d) => signedWith(d, secret)),
    'each attempt signed',
  )
  t.same(Object.keys(both[0]!.json).sort(), ['account', 'at', 'type'])
  await sleep(1500)
  t.equal(receiver.of((j) => j.type === 'webhook.test' && j.account === a.accountId).length, 2)
  t.equal((await a.dash('DELETE', '/notifications')).status, 200)
  t.equal((await a.dash('GET', '/notifications')).body.webhook, null, 'removed')
  t.equal((await a.dash('POST', '/notifications/test')).status, 404, 'nothing to test')
})

t.test('a delivery pending at a restart is sent after it', async (t) => {
  const own = await serverWith(allowed)
  const a = await account(own)
  await a.dash('PUT', '/notifications', { url: receiver.url })
  const mine = (j: any) => j.type === 'webhook.test' && j.account === a.accountId
  receiver.status = 503
  t.teardown(() => {
    receiver.status = 200
  })
  t.equal((await a.dash('POST', '/notifications/test')).status, 202)
  const [first] = await receiver.until(mine)
  await own.terminate()
  receiver.status = 200
  const before = receiver.of(mine).length
  await own.start()
  const after = await receiver.until(mine, before + 1)
  t.equal(after.at(-1)!.answered, 200, 'delivered after the restart')
  t.equal(after.at(-1)!.body, first!.body, 'the same notification')
  await own.terminate()
})

t.test('without the flag, loopback is refused when saved and when sent', async (t) => {
  // Front ends sharing a store send from one outbox: none with the flag may run meanwhile.
  await srv.terminate()
  const plain = await serverWith([])
  const a = await account(plain)
  for (const url of [
    receiver.url,
    'http://localhost:9/x',
    'http://10.1.2.3/x',
    'http://[::1]:9/',
    'http://169.254.169.254/latest',
    'ftp://example.com/x',
    'not a url',
  ]) {
    const res = await a.dash('PUT', '/notifications', { url })
    t.equal(res.status, 400, url)
    t.equal(res.body.error.code, 'invalid_webhook_url')
  }
  // Saved while allowed, sent after a restart without the flag: refused at the send.
  const dir = await serverWith(allowed)
  const b = await account(dir)
  t.equal((await b.dash('PUT', '/notifications', { url: receiver.url })).status, 200)
  await dir.terminate()
  const again = await serverWith([], dir.dataDir)
  const session = await logIn(again.url, b.email, PASSWORD)
  const res = await fetch(`${again.url}/dashboard/api/notifications/test`, {
    method: 'POST',
    headers: {
      origin: again.url,
      cookie: session.cookie!,
      'x-csrf-token': session.csrf,
      'content-type': 'application/json',
    },
    body: '{}',
  })
  t.equal(res.status, 202)
  await sleep(2000)
  t.equal(receiver.of((j) => j.account === b.accountId).length, 0, 'nothing reached loopback')
})
