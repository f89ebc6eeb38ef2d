// The overview's requests by hour and by namespace in a real browser: both tables are there
// with their captions, and they follow requests made through /v1 while the page stays open
// (no reload: a marker set in the page survives).
import t from 'tap'
import { plan } from '../helpers/plans.js'
import { startServer } from '../helpers/server.js'
import { Receiver, signedWith } from '../helpers/webhook-receiver.js'
import {
  PASSWORD,
  launch,
  logIn,
  newContext,
  open,
  pageErrors,
  ready,
  shoot,
  signUp,
  skip,
  uniqueEmail,
  v1,
} from './helpers.js'

const hourName = (ms: number) => `${new Date(ms).toISOString().slice(0, 13)}:00:00Z`

t.test('the overview follows requests by hour and by namespace live', { skip }, async (t) => {
  const srv = await startServer()
  t.teardown(() => srv.stop())
  const base = srv.url
  const browser = await launch(t)
  const page = await (await newContext(browser, base)).newPage()
  const errors = pageErrors(page)
  const key = await signUp(page, base, uniqueEmail('hours'))
  await open(page, `${base}/`)

  const hours = page.getByRole('table', { name: 'Requests by hour (UTC)' })
  const byNs = page.getByRole('table', { name: 'Requests by namespace' })
  await hours.waitFor()
  t.equal(await hours.locator('tbody tr').count(), 48, '48 hours')
  t.equal(await hours.locator('caption').textContent(), 'Requests by hour (UTC)')
  t.equal(await byNs.locator('caption').textContent(), 'Requests by namespace')
  t.same(await hours.locator('thead th').allTextContents(), [
    'Hour (UTC)',
    'Requests',
    'Errors',
    'Rate limited (429)',
  ])
  const hour = hourName(Date.now())
  const cell = (field: string) =>
    hours.locator(`tbody tr[data-hour="${hour}"] td[data-field="${field}"]`)
  t.equal(await cell('requests').textContent(), '0', 'nothing yet this hour')
  await page.evaluate(() => {
    ;(window as unknown as { notReloaded: boolean }).notReloaded = true
  })

  t.equal((await v1(base, key, 'POST', '/namespaces', { name: 'live' })).status, 201)
  for (let i = 0; i < 3; i++)
    t.equal((await v1(base, key, 'PUT', `/live/k${i}`, { value: i })).status, 201)
  t.equal((await v1(base, key, 'GET', '/live/missing')).status, 404)

  if (hourName(Date.now()) === hour) {
    await t.resolves(
      hours
        .locator(`tbody tr[data-hour="${hour}"] td[data-field="requests"]`, { hasText: /^5$/ })
        .waitFor({ timeout: 30_000 }),
      'the hour shows the five requests without a reload',
    )
    t.equal(await cell('errors').textContent(), '1', 'and the 404 as an error')
  }
  const row = byNs.locator('tbody tr[data-namespace="live"]')
  await t.resolves(
    row.locator('td[data-field="requests"]', { hasText: /^5$/ }).waitFor({ timeout: 30_000 }),
    'the namespace shows them too',
  )
  t.equal(await row.locator('td').nth(1).textContent(), '3', 'with its keys')
  t.ok(
    await page.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded),
    'the page was not reloaded',
  )
  await shoot(page, 'overview-hours')
  t.same(errors, [], 'no script errors')
})

t.test('the usage banner and the Notifications section', { skip }, async (t) => {
  const receiver = new Receiver()
  await receiver.start()
  t.teardown(() => receiver.close())
  const srv = await startServer({
    plans: {
      plans: [plan({ id: 'free', name: 'Free' }), plan({ id: 'tiny', requestsPerDay: 10 })],
      default: 'free',
      upgradeUrl: null,
    },
    args: ['--allow-private-webhooks'],
    env: { CAIRN_WEBHOOK_RETRY_MS: '300' },
  })
  t.teardown(() => srv.stop())
  const base = srv.url
  const made = await srv.createAccount(undefined, { plan: 'tiny', password: PASSWORD })
  const browser = await launch(t)
  const page = await (await newContext(browser, base)).newPage()
  const errors = pageErrors(page)
  await logIn(page, base, made.email)
  await page.waitForURL(`${base}/`)

  await open(page, `${base}/account`)
  const section = page.getByRole('form', { name: 'Notifications' })
  await section.getByLabel('Webhook URL').fill(receiver.url)
  await section.getByRole('button', { name: 'Save' }).click()
  const secret = (await page.locator('#webhook-secret-value').textContent()) ?? ''
  t.match(secret, /^whsec_/, 'the secret is shown once saved')
  await section.getByRole('button', { name: 'Send test' }).click()
  const [test] = await receiver.until((j) => j.type === 'webhook.test')
  t.ok(signedWith(test!, secret), 'the test delivery is signed with that secret')
  await page.reload()
  await ready(page)
  t.equal(await page.locator('#webhook-secret-value').count(), 0, 'and never shown again')
  t.equal(await section.getByLabel('Webhook URL').inputValue(), receiver.url)

  // 8 of 10 requests: the 80% banner on every page, saying what to do.
  for (let i = 0; i < 8; i++) await v1(base, made.apiKey, 'GET', '/namespaces')
  await receiver.until((j) => j.type === 'usage.threshold' && j.percent === 80)
  for (const path of ['/', '/keys', '/namespaces', '/plan', '/account']) {
    await open(page, `${base}${path}`)
    const banner = page.locator('.usage-banner[role="alert"]')
    t.match(
      await banner.textContent(),
      /80% of today's request quota used: 8 of 10\. .*move to a larger plan/,
      `the banner on ${path}`,
    )
  }
  await shoot(page, 'usage-banner')
  for (let i = 0; i < 2; i++) await v1(base, made.apiKey, 'GET', '/namespaces')
  await receiver.until((j) => j.type === 'usage.threshold' && j.percent === 100)
  await open(page, `${base}/keys`)
  t.match(
    await page.locator('.usage-banner[role="alert"]').textContent(),
    /Daily request quota reached: 10 of 10 requests today\. Requests are refused/,
  )

  await open(page, `${base}/account`)
  await section.getByRole('button', { name: 'Remove' }).click()
  await page.getByRole('status').filter({ hasText: 'Webhook removed.' }).waitFor()
  t.equal(await section.getByRole('button', { name: 'Send test' }).isDisabled(), true)
  t.same(errors, [], 'no script errors')
})
