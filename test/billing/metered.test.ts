// Metered plans on one server: requests past the included quota are served, and billed by
// one meter event per hour; `cairn billing flush` sends the finished hours of a stopped
// server, a restart sends none of them again, the plan page lists what was sent, and the
// monthly spending cap answers 429 spending_cap_reached. The meter's clock runs an hour
// ahead (CAIRN_TEST_METER_SKEW_MS), so the hour the requests were made in counts as over.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { cairn, json } from '../helpers/cli.js'
import { logIn } from '../helpers/dashboard-api.js'
import { startServer } from '../helpers/server.js'
import { SECRET_KEY, StripeDouble, WEBHOOK_SECRET } from '../helpers/stripe-double.js'
import {
  INCLUDED,
  METER_EVENT,
  PASSWORD,
  eventually,
  meteredPlans,
  signedIn,
  subscribe,
} from './helpers.js'

const AHEAD = { CAIRN_TEST_METER_SKEW_MS: String(3_600_000 + 60_000) }
// Run on Redis (metered-on-redis.test.ts), the command line works on the cluster too.
const STORE: Record<string, string> = process.env.CAIRN_TEST_STORE
  ? { CAIRN_STORE: process.env.CAIRN_TEST_STORE }
  : {}

t.test('overage served and billed once per hour, across a restart', async (t) => {
  const double = await StripeDouble.start(t)
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-metered-'))
  t.teardown(() => fs.rmSync(dataDir, { recursive: true, force: true }))
  const serve = async (env: Record<string, string> = {}) => {
    const srv = await startServer({
      plans: meteredPlans(),
      args: double.flags(),
      env: { CAIRN_BILLING_SCAN_MS: '500', ...env },
      dataDir,
    })
    t.teardown(() => srv.stop())
    double.webhookUrl = `${srv.url}/billing/stripe/webhook`
    return srv
  }

  // Meter's clock as the world's: the current hour is not over, nothing is sent.
  const first = await serve()
  const a = await signedIn(first)
  const { customer } = await subscribe(double, a, 'metered')
  const get = () =>
    fetch(`${first.baseUrl}/namespaces`, { headers: { 'x-api-key': a.apiKey } }).then(
      (r) => r.status,
    )
  const statuses: number[] = []
  for (let i = 0; i < INCLUDED + 3; i++) statuses.push(await get())
  t.same(statuses, Array(INCLUDED + 3).fill(200), 'requests past the quota are served, not 429')
  const usage = await fetch(`${first.baseUrl}/usage`, { headers: { 'x-api-key': a.apiKey } })
  t.equal(usage.status, 200)
  const body = (await usage.json()) as any
  t.equal(body.plan.id, 'metered')
  t.equal(body.plan.spendingCapCents, null, 'no cap set: reported as null')
  const hour = body.hours.at(-1).hour as string
  t.equal(double.meterEvents.length, 0, 'an hour not over is not sent')
  await first.terminate()

  // Stopped: `cairn billing flush` opens the data directory and sends the finished hour.
  const flags = ['--data', dataDir, '--plans', first.plansFile!, '--json']
  const stripe = [
    '--stripe-secret-key',
    SECRET_KEY,
    '--stripe-webhook-secret',
    WEBHOOK_SECRET,
    '--stripe-api-url',
    double.url,
  ]
  const off = await cairn(['billing', 'flush', ...flags], STORE)
  t.not(off.code, 0, 'without Stripe settings it refuses')
  t.equal(double.meterEvents.length, 0)
  const flushed = await cairn(['billing', 'flush', ...flags, ...stripe], { ...AHEAD, ...STORE })
  t.equal(flushed.code, 0, flushed.stderr)
  const sent = json(flushed).sent
  // Requests past the quota: the 3 made past it, and GET /usage's own (counted after it).
  t.same(
    sent,
    [{ account: a.accountId, hour, requests: 4, sentAt: sent[0]?.sentAt }],
    'the hour sent',
  )
  t.equal(double.meterEvents.length, 1)
  t.same(double.meterEvents[0], {
    event_name: METER_EVENT,
    identifier: `${a.accountId}:${hour}`,
    timestamp: String(Date.parse(hour) / 1000),
    payload: { stripe_customer_id: customer, value: '4' },
  })

  // Restarted with the meter's clock ahead and its timer looking every half second: the
  // hour is sent already, by its record; a flush (through the server, or on Redis) finds
  // nothing to send.
  const again = await serve(AHEAD)
  const second = await cairn(['billing', 'flush', ...flags, ...stripe], { ...AHEAD, ...STORE })
  t.equal(second.code, 0, second.stderr)
  t.same(json(second).sent, [], 'nothing sent twice')
  const posts = double.callsTo('POST', '/v1/billing/meter_events')
  t.equal(posts.length, 1, 'one request to Stripe for the hour')

  // The plan page lists the hours sent.
  const session = await logIn(again.url, a.email, PASSWORD)
  const page = (await (
    await fetch(`${again.url}/dashboard/api/plans`, { headers: { cookie: session.cookie! } })
  ).json()) as any
  t.same(page.billing.metered.sent, [{ hour, requests: 4, sentAt: sent[0]?.sentAt }])
})

t.test('the spending cap, and the plan page', async (t) => {
  const double = await StripeDouble.start(t)
  const srv = await startServer({
    plans: meteredPlans(),
    args: double.flags(),
    env: { CAIRN_BILLING_SCAN_MS: '500', ...AHEAD },
  })
  t.teardown(() => srv.stop())
  double.webhookUrl = `${srv.url}/billing/stripe/webhook`
  const a = await signedIn(srv)
  const free = await a.call('PUT', '/billing/spending-cap', { cents: 100 })
  t.equal(free.status, 409, 'no cap on a plan that is not metered')
  await subscribe(double, a, 'metered')
  t.equal((await a.call('PUT', '/billing/spending-cap', { cents: -1 })).status, 400)
  t.equal((await a.call('PUT', '/billing/spending-cap', { cents: 1.5 })).status, 400)
  t.equal((await a.call('PUT', '/billing/spending-cap', { cents: 3 })).status, 200)

  const get = () =>
    fetch(`${srv.baseUrl}/namespaces`, { headers: { 'x-api-key': a.apiKey } }).then(async (r) => ({
      status: r.status,
      retryAfter: Number(r.headers.get('retry-after')),
      body: (await r.json()) as any,
    }))
  const usage = await fetch(`${srv.baseUrl}/usage`, { headers: { 'x-api-key': a.apiKey } })
  t.equal(((await usage.json()) as any).plan.spendingCapCents, 3, 'GET /usage reports the cap')
  // One request counted so far (GET /usage): the quota's rest, then 3 cents' worth past it.
  const served: number[] = []
  for (let i = 1; i < INCLUDED + 3; i++) served.push((await get()).status)
  t.same(served, Array(INCLUDED + 2).fill(200), 'served up to the cap')
  const capped = await get()
  t.equal(capped.status, 429)
  t.equal(capped.body.error.code, 'spending_cap_reached')
  const d = new Date()
  const monthEnd = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)
  const toMonthEnd = Math.ceil((monthEnd - Date.now()) / 1000)
  t.ok(
    capped.retryAfter >= toMonthEnd - 10 && capped.retryAfter <= toMonthEnd + 10,
    'Retry-After: until the month ends',
  )
  const alerts = await a.call('GET', '/alerts')
  t.same(
    alerts.body.alerts.filter((x: any) => x.metric === 'spend'),
    [{ metric: 'spend', percent: 100, value: 3, limit: 3 }],
    'the banner says the cap is reached',
  )
  t.equal((await a.call('PUT', '/billing/spending-cap', { cents: null })).status, 200)
  t.equal((await get()).status, 200, 'no cap: served again')

  // The meter sends the hour (its clock is ahead), and the plan page lists it.
  t.ok(await eventually(15_000, async () => double.meterEvents.length > 0), 'the hour was sent')
  const page = await a.call('GET', '/plans')
  const m = page.body.billing.metered
  t.equal(m.includedPerDay, INCLUDED)
  t.equal(m.spendingCapCents, null)
  t.equal(m.sent.length, 1)
  t.equal(m.sent[0].requests, Number(double.meterEvents[0]!.payload.value))
})

t.test('the plans file: meteredCentsPerThousand', async (t) => {
  const { parsePlans } = await import('../../server/services/plans.js')
  const file = (extra: Record<string, unknown>) => {
    const p = meteredPlans()
    Object.assign(p.plans[2]!, extra)
    return JSON.stringify(p)
  }
  t.equal(parsePlans(file({}), 'plans.json').plans[2]!.meteredCentsPerThousand, 1000)
  t.equal(
    parsePlans(file({ meteredCentsPerThousand: null }), 'plans.json').plans[2]!
      .meteredCentsPerThousand,
    null,
  )
  t.throws(() => parsePlans(file({ meteredCentsPerThousand: -1 }), 'p'), /must be a number >= 0/)
  t.throws(() => parsePlans(file({ meteredCentsPerThousand: '5' }), 'p'), /must be a number >= 0/)
  const flat = meteredPlans()
  Object.assign(flat.plans[1]!, { meteredCentsPerThousand: 5 })
  t.throws(() => parsePlans(JSON.stringify(flat), 'p'), /is for a metered plan/)
})

// Last: its account's hour is left unsent, and on Redis (metered-on-redis.test.ts) a server of
// a later test, its meter's clock ahead, would bill it to its own Stripe double.
t.test('Upstash commands past the quota are served as /v1 requests are', async (t) => {
  const double = await StripeDouble.start(t)
  const srv = await startServer({ plans: meteredPlans(), args: double.flags() })
  t.teardown(() => srv.stop())
  double.webhookUrl = `${srv.url}/billing/stripe/webhook`
  const a = await signedIn(srv)
  const created = await fetch(`${srv.baseUrl}/namespaces`, {
    method: 'POST',
    headers: { 'x-api-key': a.apiKey, 'content-type': 'application/json' },
    body: '{"name":"u"}',
  })
  t.equal(created.status, 201)
  const upstash = (body: unknown, path = 'u') =>
    fetch(`${srv.url}/upstash/${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${a.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
  await subscribe(double, a, 'metered')
  const statuses: number[] = []
  for (let i = 0; i < INCLUDED + 3; i++) statuses.push((await upstash(['INCR', 'k'])).status)
  t.same(statuses, Array(INCLUDED + 3).fill(200), 'commands past the quota are served, not 429')
  const many = await upstash(
    [
      ['INCR', 'k'],
      ['GET', 'k'],
    ],
    'u/pipeline',
  )
  t.equal(many.status, 200, 'and a pipeline past it')
  t.same(await many.json(), [{ result: INCLUDED + 4 }, { result: String(INCLUDED + 4) }])
})
