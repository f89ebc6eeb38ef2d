// The move to the default plan when a subscription is canceled or unpaid: at the end of its
// paid period (the double sets it a few seconds ahead), not before, and across a restart;
// and none once a cancellation is taken back. Against the Stripe double, as stripe.test.ts.
import t from 'tap'
import { StripeDouble } from '../helpers/stripe-double.js'
import { billingServer, eventually, planOf, signedIn } from './helpers.js'

for (const lapse of ['canceled', 'unpaid'] as const) {
  t.test(
    `${lapse}: the default plan at the end of the paid period, across a restart`,
    async (t) => {
      const double = await StripeDouble.start(t)
      const srv = await billingServer(t, double)
      const a = await signedIn(srv)
      const { url } = (await a.call('POST', '/billing/checkout', { plan: 'pro' })).body
      // The unpaid one on an older API version: the period on the subscription, not its item.
      const { session, subscription } = double.completeCheckout(/checkout\/(\w+)$/.exec(url)![1]!, {
        oldApi: lapse === 'unpaid',
      })
      await double.send('checkout.session.completed', session)
      t.equal(await planOf(srv, a.apiKey), 'pro')

      if (lapse === 'unpaid') {
        // Stripe retrying the payment: past_due keeps the plan (the grace).
        double.update(subscription.id, { status: 'past_due' })
        const failed = {
          id: 'in_1',
          object: 'invoice',
          customer: subscription.customer,
          subscription: subscription.id,
        }
        t.equal((await double.send('invoice.payment_failed', failed)).status, 200)
        t.equal(await planOf(srv, a.apiKey), 'pro', 'past_due: still pro')
      }
      const periodEnd = Date.now() + 12_000
      double.update(subscription.id, { status: lapse }, periodEnd)
      const event =
        lapse === 'canceled'
          ? double.event('customer.subscription.deleted', subscription)
          : double.event('invoice.payment_failed', {
              id: 'in_2',
              object: 'invoice',
              customer: subscription.customer,
              parent: {
                type: 'subscription_details',
                subscription_details: { subscription: subscription.id },
              },
            })
      t.equal((await double.deliver(event)).status, 200)
      const before = Date.now()
      const plans = (await a.call('GET', '/plans')).body
      if (before < periodEnd) {
        t.equal(await planOf(srv, a.apiKey), 'pro', 'the paid period is not over yet')
        t.equal(plans.billing.status, lapse)
        t.equal(
          plans.billing.downgradeAt,
          new Date(Math.floor(periodEnd / 1000) * 1000).toISOString(),
        )
      }
      await srv.restart()
      const moved = await eventually(90_000, async () => (await planOf(srv, a.apiKey)) === 'free')
      t.ok(moved, 'moved to the default plan')
      t.ok(Date.now() >= Math.floor(periodEnd / 1000) * 1000, 'not before the period ended')
      const a2 = await signedIn(srv)
      t.equal((await a2.call('GET', '/plans')).body.current, 'free', 'another account is untouched')
    },
  )
}

t.test('cancel at period end, then renewed: no downgrade', async (t) => {
  const double = await StripeDouble.start(t)
  const srv = await billingServer(t, double)
  const a = await signedIn(srv)
  const { url } = (await a.call('POST', '/billing/checkout', { plan: 'pro' })).body
  const { session, subscription } = double.completeCheckout(/checkout\/(\w+)$/.exec(url)![1]!)
  await double.send('checkout.session.completed', session)
  const periodEnd = Date.now() + 60_000
  double.update(subscription.id, { cancel_at_period_end: true }, periodEnd)
  await double.send('customer.subscription.updated', subscription)
  const plans = (await a.call('GET', '/plans')).body
  t.equal(plans.billing.status, 'active')
  t.ok(plans.billing.downgradeAt, 'a downgrade is planned for the period end')
  double.update(subscription.id, { cancel_at_period_end: false })
  await double.send('customer.subscription.updated', subscription)
  t.equal(
    (await a.call('GET', '/plans')).body.billing.downgradeAt,
    null,
    'and dropped when renewed',
  )
  t.equal(await planOf(srv, a.apiKey), 'pro')
})
