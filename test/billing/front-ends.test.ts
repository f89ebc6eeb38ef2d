// Two front ends on one Redis Cluster with Stripe on: an event reaches either and the plan
// follows on both; the same event sent to both at once is acted on once; a downgrade
// planned by one is carried out by the other once the first has stopped.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { logIn } from '../helpers/dashboard-api.js'
import { clusterFor } from '../helpers/redis-cluster.js'
import { startServer } from '../helpers/server.js'
import { StripeDouble } from '../helpers/stripe-double.js'
import { PASSWORD, billingPlans, eventually, planOf } from './helpers.js'

const cluster = await clusterFor(t)

t.test('two front ends share events and downgrades', { skip: !cluster }, async (t) => {
  const double = await StripeDouble.start(t)
  const front = async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-front-'))
    t.teardown(() => fs.rmSync(dataDir, { recursive: true, force: true }))
    const srv = await startServer({
      plans: billingPlans(),
      args: [...double.flags(), '--store', cluster!.url],
      env: { CAIRN_BILLING_SCAN_MS: '500' },
      dataDir,
    })
    t.teardown(() => srv.stop())
    return srv
  }
  const a = await front()
  const b = await front()
  const hookA = `${a.url}/billing/stripe/webhook`
  const hookB = `${b.url}/billing/stripe/webhook`

  const acct = await a.createAccount(undefined, { password: PASSWORD })
  const session = await logIn(a.url, acct.email, PASSWORD)
  const res = await fetch(`${a.url}/dashboard/api/billing/checkout`, {
    method: 'POST',
    headers: {
      cookie: session.cookie!,
      origin: a.url,
      'x-csrf-token': session.csrf,
      'content-type': 'application/json',
    },
    body: '{"plan":"pro"}',
  })
  t.equal(res.status, 200)
  const { url } = (await res.json()) as { url: string }
  const { session: cs, subscription } = double.completeCheckout(/checkout\/(\w+)$/.exec(url)![1]!)

  // The customer was made on A; the event goes to B.
  const e = double.event('checkout.session.completed', cs)
  t.equal((await double.deliver(e, hookB)).body.outcome, 'handled')
  t.ok(
    await eventually(10_000, async () => (await planOf(a, acct.apiKey)) === 'pro'),
    'A sees the plan B set',
  )
  t.equal(await planOf(b, acct.apiKey), 'pro')

  // One event, both front ends at once: acted on once; the other waits for it, and says so.
  const reads = () => double.callsTo('GET', `/v1/subscriptions/${subscription.id}`).length
  const before = reads()
  const twin = double.event('customer.subscription.updated', subscription)
  const answers = await Promise.all([double.deliver(twin, hookA), double.deliver(twin, hookB)])
  t.same(
    answers.map((r) => r.status),
    [200, 200],
    'both answered 200',
  )
  t.same(answers.map((r) => r.body.outcome).sort(), ['duplicate', 'handled'], 'one acted on it')
  t.equal(reads() - before, 1, 'the subscription read once')
  const again = await double.deliver(twin, hookB)
  t.equal(again.body.outcome, 'duplicate', 'sent again later: already handled')

  // A plans the downgrade, then stops; B carries it out at the period's end.
  const periodEnd = Date.now() + 8000
  double.update(subscription.id, { status: 'canceled' }, periodEnd)
  t.equal(
    (await double.deliver(double.event('customer.subscription.deleted', subscription), hookA))
      .status,
    200,
  )
  await a.terminate()
  t.ok(
    await eventually(90_000, async () => (await planOf(b, acct.apiKey)) === 'free'),
    'B moved the account to the default plan',
  )
  t.ok(Date.now() >= Math.floor(periodEnd / 1000) * 1000, 'after the period ended')
})
