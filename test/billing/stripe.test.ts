// Paid plans through Stripe, against a double of Stripe's HTTP API (test/helpers/
// stripe-double.ts) with events signed by the official `stripe` package: Checkout from the
// dashboard, the webhook's signature and timestamp checks, each event acted on once (also
// across a restart). downgrade.test.ts has the end of a paid period. Both run on Redis too
// (test/store/backends-billing.test.ts).
import t from 'tap'
import { startServer } from '../helpers/server.js'
import { StripeDouble } from '../helpers/stripe-double.js'
import { PASSWORD, PRO_PRICE, billingPlans, billingServer, planOf, signedIn } from './helpers.js'

t.test('off unless both Stripe secrets are given', async (t) => {
  for (const args of [[], ['--stripe-secret-key', 'sk_test_only']]) {
    const srv = await startServer({ plans: billingPlans(), args })
    t.teardown(() => srv.stop())
    const res = await fetch(`${srv.url}/billing/stripe/webhook`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'stripe-signature': 't=1,v1=00' },
      body: '{}',
    })
    t.equal(res.status, 404, `webhook with ${args.length ? 'one secret' : 'none'}`)
    t.equal(((await res.json()) as any).error.code, 'not_found')
    const a = await signedIn(srv)
    const plans = await a.call('GET', '/plans')
    t.equal(plans.body.billing, null, 'the plan page has no billing')
    t.notOk(
      plans.body.plans.some((p: any) => p.checkout),
      'no plan offers Checkout',
    )
    t.equal((await a.call('POST', '/billing/checkout', { plan: 'pro' })).status, 404)
    if (args.length)
      t.ok(
        srv.lines.some((l) => l.includes('Stripe stays off')),
        'the log says why Stripe is off',
      )
    await srv.stop()
  }
})

t.test('the plans file and the API origin are checked at start', async (t) => {
  const bad = billingPlans()
  ;(bad.plans[1] as any).stripeMeteredPriceId = 'price_metered'
  await t.rejects(
    startServer({ plans: bad }),
    /stripeMeteredPriceId and meterEventName are given together/,
  )
  const def = billingPlans()
  def.default = 'pro'
  await t.rejects(startServer({ plans: def }), /default plan "pro" cannot have a stripePriceId/)
  const spaced = billingPlans()
  ;(spaced.plans[1] as any).stripePriceId = 'price with spaces'
  await t.rejects(startServer({ plans: spaced }), /plans\[1\]\.stripePriceId must be/)
  await t.rejects(
    startServer({ plans: billingPlans(), args: ['--stripe-api-url', 'http://127.0.0.1:1/v1'] }),
    /--stripe-api-url takes an origin/,
  )
})

t.test('checkout, then the plan changes only with the webhook', async (t) => {
  const double = await StripeDouble.start(t)
  const srv = await billingServer(t, double)
  const a = await signedIn(srv)

  const plans = await a.call('GET', '/plans')
  t.same(
    plans.body.plans.map((p: any) => [p.id, p.checkout, p.switchable]),
    [
      ['free', false, true],
      ['pro', true, false],
    ],
  )
  t.equal(plans.body.billing.subscribed, false)
  t.equal((await a.call('POST', '/plan', { plan: 'pro' })).status, 403, 'no switching by hand')

  const first = await a.call('POST', '/billing/checkout', { plan: 'pro' })
  t.equal(first.status, 200)
  const again = await a.call('POST', '/billing/checkout', { plan: 'pro' })
  t.equal(double.customers.size, 1, 'one customer, made on the first checkout')
  const [customer] = [...double.customers.values()]
  t.equal(customer.email, a.email, 'with the account email')
  t.equal(customer.metadata.account, a.accountId)
  const sessionId = /\/checkout\/([A-Za-z0-9_]+)$/.exec(first.body.url)![1]!
  const session = double.sessions.get(sessionId)
  t.ok(first.body.url.startsWith(`${double.url}/checkout/`), 'the browser goes to the session url')
  t.equal(session.mode, 'subscription')
  t.equal(session.client_reference_id, a.accountId)
  t.equal(session.metadata.account, a.accountId)
  t.equal(session.customer, customer.id)
  t.same(session.line_items, [{ price: PRO_PRICE, quantity: '1' }])
  t.match(session.success_url, `${srv.url}/plan`)
  t.not(again.body.url, first.body.url, 'each checkout is a session of its own')

  const { subscription } = double.completeCheckout(sessionId)
  t.equal(await planOf(srv, a.apiKey), 'free', 'paid at Stripe, but no event yet: still free')

  const e = await double.send('checkout.session.completed', session)
  t.same(e, { status: 200, body: { received: true, outcome: 'handled' } })
  t.equal(await planOf(srv, a.apiKey), 'pro', 'the event moved the account to pro')
  t.equal(
    double.callsTo('GET', `/v1/subscriptions/${subscription.id}`).length,
    1,
    'the subscription was read from Stripe',
  )
  const after = await a.call('GET', '/plans')
  t.match(after.body.billing, { subscribed: true, live: true, status: 'active', plan: 'pro' })
  t.equal(after.body.current, 'pro')
  const twice = await a.call('POST', '/billing/checkout', { plan: 'pro' })
  t.same([twice.status, twice.body.error.code], [409, 'already_subscribed'])
  const byHand = await a.call('POST', '/plan', { plan: 'free' })
  t.same([byHand.status, byHand.body.error.code], [409, 'already_subscribed'])

  const portal = await fetch(`${srv.url}/billing/portal`, {
    headers: { cookie: a.cookie },
    redirect: 'manual',
  })
  t.equal(portal.status, 302)
  t.match(portal.headers.get('location'), `${double.url}/portal/`, 'to the customer portal')
  t.equal(double.callsTo('POST', '/v1/billing_portal/sessions')[0]!.body.customer, customer.id)

  const ignored = await double.send('customer.created', customer)
  t.same(ignored, { status: 200, body: { received: true, outcome: 'ignored' } })
  const bad = await fetch(double.webhookUrl, { method: 'GET' })
  t.equal(bad.status, 405)
})

t.test('signatures: a wrong one and an old one are refused', async (t) => {
  const double = await StripeDouble.start(t)
  const srv = await billingServer(t, double)
  const a = await signedIn(srv)
  const { url } = (await a.call('POST', '/billing/checkout', { plan: 'pro' })).body
  const { session } = double.completeCheckout(/checkout\/(\w+)$/.exec(url)![1]!)
  const reads = () => double.calls.filter((c) => c.path.startsWith('/v1/subscriptions/')).length

  const wrong = await double.send('checkout.session.completed', session, { secret: 'whsec_other' })
  t.same([wrong.status, wrong.body.error.code], [400, 'invalid_signature'], 'another secret')
  const stale = await double.send('checkout.session.completed', session, {
    timestamp: Math.floor(Date.now() / 1000) - 301,
  })
  t.same([stale.status, stale.body.error.code], [400, 'invalid_signature'], '301 s old')
  const e = double.event('checkout.session.completed', session)
  const changed = await double.deliver({
    payload: e.payload.replace('"livemode":false', '"livemode":true'),
    header: e.header,
  })
  t.equal(changed.status, 400, 'a body changed after signing')
  const none = await fetch(double.webhookUrl, { method: 'POST', body: e.payload })
  t.equal(none.status, 400, 'no signature at all')
  t.equal(reads(), 0, 'nothing refused reached Stripe')
  t.equal(await planOf(srv, a.apiKey), 'free')

  const recent = await double.send('checkout.session.completed', session, {
    timestamp: Math.floor(Date.now() / 1000) - 200,
  })
  t.equal(recent.status, 200, '200 s old is within the 300 s')
  t.equal(await planOf(srv, a.apiKey), 'pro')
})

t.test('the same event twice is acted on once; Stripe down means try again', async (t) => {
  const double = await StripeDouble.start(t)
  const srv = await billingServer(t, double)
  const a = await signedIn(srv)
  const { url } = (await a.call('POST', '/billing/checkout', { plan: 'pro' })).body
  const { session, subscription } = double.completeCheckout(/checkout\/(\w+)$/.exec(url)![1]!)

  double.failNext = 3
  const e = double.event('customer.subscription.created', subscription)
  const down = await double.deliver(e)
  t.same([down.status, down.body.error.code], [503, 'unavailable'], 'Stripe unreachable')
  t.equal(await planOf(srv, a.apiKey), 'free')
  t.same((await double.deliver(e)).body, { received: true, outcome: 'handled' }, 'sent again')
  t.equal(await planOf(srv, a.apiKey), 'pro')

  // The operator moves the account by hand; the old event, sent once more, changes nothing.
  await srv.operator('plan.set', { email: a.email, plan: 'free' })
  const reads = double.callsTo('GET', `/v1/subscriptions/${subscription.id}`).length
  t.same((await double.deliver(e)).body, { received: true, outcome: 'duplicate' })
  t.equal(await planOf(srv, a.apiKey), 'free', 'still where the operator put it')
  t.equal(
    double.callsTo('GET', `/v1/subscriptions/${subscription.id}`).length,
    reads,
    'not read again',
  )
  await srv.restart()
  double.webhookUrl = `${srv.url}/billing/stripe/webhook`
  t.same((await double.deliver(e)).body.outcome, 'duplicate', 'remembered across a restart')
  t.equal(await planOf(srv, a.apiKey), 'free')
  // A new event is acted on.
  t.same((await double.send('checkout.session.completed', session)).body.outcome, 'handled')
  t.equal(await planOf(srv, a.apiKey), 'pro')
  // One sent twice at once: one acts, the other waits for it; both are answered 200.
  const at = double.callsTo('GET', `/v1/subscriptions/${subscription.id}`).length
  const twin = double.event('customer.subscription.updated', subscription)
  const both = await Promise.all([double.deliver(twin), double.deliver(twin)])
  t.same(both.map((r) => [r.status, r.body.outcome]).sort(), [
    [200, 'duplicate'],
    [200, 'handled'],
  ])
  t.equal(double.callsTo('GET', `/v1/subscriptions/${subscription.id}`).length, at + 1)
})

t.test('deleting a subscribed account cancels its subscription first', async (t) => {
  const double = await StripeDouble.start(t)
  const srv = await billingServer(t, double)
  const a = await signedIn(srv)
  const { url } = (await a.call('POST', '/billing/checkout', { plan: 'pro' })).body
  const { session, subscription } = double.completeCheckout(/checkout\/(\w+)$/.exec(url)![1]!)
  await double.send('checkout.session.completed', session)
  const remove = { confirm: a.email, password: PASSWORD }

  double.failNext = 3
  const down = await a.call('POST', '/account/delete', remove)
  t.same([down.status, down.body.error.code], [503, 'unavailable'], 'Stripe unreachable')
  t.equal(await planOf(srv, a.apiKey), 'pro', 'so the account is kept')
  t.equal(subscription.status, 'active')

  const gone = await a.call('POST', '/account/delete', remove)
  t.equal(gone.status, 200)
  t.equal(subscription.status, 'canceled', 'canceled at Stripe')
  t.equal(double.callsTo('DELETE', `/v1/subscriptions/${subscription.id}`).length, 4)
  const res = await fetch(`${srv.baseUrl}/usage`, { headers: { 'x-api-key': a.apiKey } })
  t.equal(res.status, 401, 'and the account is gone')
})
