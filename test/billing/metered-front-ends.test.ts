// Two front ends on one Redis Cluster, both with the meter's clock an hour ahead
// (CAIRN_TEST_METER_SKEW_MS) and looking every half second, started at once: the finished
// hour of an account's requests past its included quota is sent to Stripe once, and a
// `cairn billing flush` on the cluster afterwards finds nothing left to send.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { cairn, json } from '../helpers/cli.js'
import { clusterFor } from '../helpers/redis-cluster.js'
import { startServer } from '../helpers/server.js'
import { SECRET_KEY, StripeDouble, WEBHOOK_SECRET } from '../helpers/stripe-double.js'
import { INCLUDED, eventually, meteredPlans, signedIn, subscribe } from './helpers.js'

const cluster = await clusterFor(t)
const AHEAD = { CAIRN_TEST_METER_SKEW_MS: String(3_600_000 + 60_000) }

t.test('one meter event per hour across front ends', { skip: !cluster }, async (t) => {
  const double = await StripeDouble.start(t)
  const front = async (env: Record<string, string> = {}) => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-front-'))
    t.teardown(() => fs.rmSync(dataDir, { recursive: true, force: true }))
    const srv = await startServer({
      plans: meteredPlans(),
      args: [...double.flags(), '--store', cluster!.url],
      env: { CAIRN_BILLING_SCAN_MS: '500', ...env },
      dataDir,
    })
    t.teardown(() => srv.stop())
    return srv
  }

  // The requests, on a front end whose meter waits for the hour to end.
  const first = await front()
  double.webhookUrl = `${first.url}/billing/stripe/webhook`
  const a = await signedIn(first)
  const { customer } = await subscribe(double, a, 'metered')
  for (let i = 0; i < INCLUDED + 3; i++) {
    const r = await fetch(`${first.baseUrl}/namespaces`, { headers: { 'x-api-key': a.apiKey } })
    t.equal(r.status, 200, 'served past the quota')
  }
  const hour = `${new Date().toISOString().slice(0, 13)}:00:00Z`
  await first.terminate()

  // Two front ends for which that hour is over, started together.
  await Promise.all([front(AHEAD), front(AHEAD)])
  const ours = () =>
    double
      .callsTo('POST', '/v1/billing/meter_events')
      .filter((c) => c.body.identifier === `${a.accountId}:${hour}`)
  t.ok(await eventually(20_000, async () => ours().length > 0), 'the hour was sent')

  const flush = await cairn(
    [
      'billing',
      'flush',
      '--store',
      cluster!.url,
      '--plans',
      first.plansFile!,
      '--json',
      '--stripe-secret-key',
      SECRET_KEY,
      '--stripe-webhook-secret',
      WEBHOOK_SECRET,
      '--stripe-api-url',
      double.url,
    ],
    AHEAD,
  )
  t.equal(flush.code, 0, flush.stderr)
  t.same(
    json(flush).sent.filter((s: any) => s.account === a.accountId),
    [],
    'nothing left for the flush to send',
  )
  t.equal(ours().length, 1, 'one request to Stripe for the hour, from either front end')
  t.same(ours()[0]!.body.payload, { stripe_customer_id: customer, value: '3' })
})
