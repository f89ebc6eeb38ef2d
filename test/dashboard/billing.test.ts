// The plan page with Stripe on, in a real browser: a free account's "Subscribe" button goes
// to Checkout (the Stripe double's page), the plan changes once Stripe's event arrives, and
// the subscribed account's page then links to the customer portal.
import t from 'tap'
import { billingPlans } from '../billing/helpers.js'
import { StripeDouble } from '../helpers/stripe-double.js'
import { open, shoot, signedIn, skip, v1 } from './helpers.js'

t.test('free to Checkout, subscribed to the portal', { skip }, async (t) => {
  const double = await StripeDouble.start(t)
  const { srv, base, page, errors, email, key } = await signedIn(t, 'billing', {
    plans: billingPlans(),
    args: double.flags(),
  })
  double.webhookUrl = `${srv.url}/billing/stripe/webhook`

  await open(page, `${base}/plan`)
  t.equal(await page.getByRole('link', { name: 'Manage billing' }).count(), 0, 'no portal yet')
  await shoot(page, 'plan-stripe')
  await page.getByRole('button', { name: 'Subscribe to Pro' }).click()
  await page.waitForURL(`${double.url}/checkout/**`)
  const sessionId = /checkout\/(\w+)$/.exec(page.url())![1]!
  const session = double.sessions.get(sessionId)
  t.equal(double.customers.get(session.customer).email, email, "the account's customer")
  t.equal((await v1(base, key, 'GET', '/usage')).body.plan.id, 'free', 'not before the event')

  double.completeCheckout(sessionId)
  t.equal((await double.send('checkout.session.completed', session)).status, 200)
  await open(page, session.success_url)
  t.match(await page.getByRole('status').first().textContent(), /Thank you/)
  t.match(await page.locator('.plan-current h2').textContent(), /^Pro/)
  t.match(await page.locator('#billing').textContent(), /Subscription: Pro, active/)
  t.equal(await page.getByRole('button', { name: /^Subscribe to/ }).count(), 0)
  t.notMatch(await page.locator('main').textContent(), /\bnull\b/, 'nothing left out shows')
  await shoot(page, 'plan-subscribed')
  await page.getByRole('link', { name: 'Manage billing' }).click()
  await page.waitForURL(`${double.url}/portal/**`)
  t.match(await page.locator('#where').textContent(), /^portal /)
  const portal = double.callsTo('POST', '/v1/billing_portal/sessions')
  t.equal(portal.length, 1)
  t.equal(portal[0]!.body.customer, session.customer)
  t.equal(portal[0]!.body.return_url, `${base}/plan`)
  t.same(errors, [])
})
