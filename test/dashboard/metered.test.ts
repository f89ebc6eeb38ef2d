// The plan page of an account on a metered plan, in a real browser: it subscribes through
// Checkout, sets a monthly spending cap in the Metered usage card (which GET /v1/usage then
// reports and the server holds it to), and sees the hour sent to Stripe's meter (the meter's
// clock runs an hour ahead, CAIRN_TEST_METER_SKEW_MS, so the current hour counts as over).
import t from 'tap'
import { INCLUDED, eventually, meteredPlans } from '../billing/helpers.js'
import { startServer } from '../helpers/server.js'
import { StripeDouble } from '../helpers/stripe-double.js'
import {
  launch,
  newContext,
  open,
  pageErrors,
  shoot,
  signUp,
  skip,
  uniqueEmail,
  v1,
} from './helpers.js'

t.test('the metered usage card', { skip }, async (t) => {
  const double = await StripeDouble.start(t)
  const srv = await startServer({
    plans: meteredPlans(),
    args: double.flags(),
    env: { CAIRN_BILLING_SCAN_MS: '500', CAIRN_TEST_METER_SKEW_MS: String(3_660_000) },
  })
  t.teardown(() => srv.stop())
  double.webhookUrl = `${srv.url}/billing/stripe/webhook`
  const base = srv.url
  const browser = await launch(t)
  const page = await (await newContext(browser, base)).newPage()
  const errors = pageErrors(page)
  const key = await signUp(page, base, uniqueEmail('metered'))

  await open(page, `${base}/plan`)
  t.equal(await page.locator('#metered').count(), 0, 'no metered card before subscribing')
  await page.getByRole('button', { name: 'Subscribe to Metered' }).click()
  await page.waitForURL(`${double.url}/checkout/**`)
  const sessionId = /checkout\/(\w+)$/.exec(page.url())![1]!
  const session = double.sessions.get(sessionId)
  t.same(
    session.line_items.map((i: any) => i.price),
    ['price_cairn_metered_flat', 'price_cairn_metered'],
    'Checkout subscribes to the flat and the metered price',
  )
  double.completeCheckout(sessionId)
  t.equal((await double.send('checkout.session.completed', session)).status, 200)

  await open(page, `${base}/plan`)
  const card = page.locator('#metered')
  t.match(
    await card.textContent(),
    /Requests past 5 a day are served and billed at \$10\.00 per 1,000/,
  )
  t.match(await card.textContent(), /None yet/)
  await page.getByLabel('Monthly spending cap (USD, empty for none)').fill('0.03')
  await page.getByRole('button', { name: 'Save cap' }).click()
  t.ok(
    await eventually(
      5000,
      async () => (await v1(base, key, 'GET', '/usage')).body.plan.spendingCapCents === 3,
    ),
    'GET /v1/usage reports the cap set on the page',
  )

  // One request so far (GET /usage, maybe a few while polling): past the quota, 3 cents' worth.
  const statuses: number[] = []
  for (let i = 0; i < INCLUDED + 6; i++)
    statuses.push((await v1(base, key, 'GET', '/namespaces')).status)
  t.ok(statuses.includes(429), 'refused once the cap is reached')
  t.equal(statuses.indexOf(429) >= INCLUDED, true, 'not before the included quota is used')
  t.ok(await eventually(15_000, async () => double.meterEvents.length > 0), 'the hour was sent')

  await open(page, `${base}/plan`)
  const rows = page.locator('#meter-hours tbody tr')
  t.equal(await rows.count(), 1, 'the hour sent is listed')
  t.match(
    await rows.first().textContent(),
    new RegExp(
      `^${double.meterEvents[0]!.identifier.split(':').slice(1).join(':')}${double.meterEvents[0]!.payload.value}`,
    ),
  )
  t.equal(await page.getByLabel('Monthly spending cap (USD, empty for none)').inputValue(), '0.03')
  await shoot(page, 'plan-metered')
  t.same(errors, [])
})
