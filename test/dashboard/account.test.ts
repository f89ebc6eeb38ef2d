// The plan and account pages in a real browser: the plans table from the server's plan
// file, switching plans (free always, paid ones only when the operator allows), the
// upgrade path, changing the password and deleting the account with all its data.
import t from 'tap'
import {
  PASSWORD,
  logIn,
  newContext,
  open,
  ready,
  shoot,
  signUp,
  signedIn,
  skip,
  v1,
} from './helpers.js'

const plan = (id: string, price: number, selfServe: boolean) => ({
  id,
  name: id[0]!.toUpperCase() + id.slice(1),
  priceUsdPerMonth: price,
  requestsPerDay: 1000 * (price + 1),
  ratePerSecond: 10,
  burst: 20,
  maxNamespaces: 5,
  maxStorageBytes: 1 << 20,
  maxValueBytes: 1 << 16,
  selfServe,
})

t.test('plans with the default plan file', { skip }, async (t) => {
  const { srv, base, page, errors, email, key } = await signedIn(t, 'plan')

  await open(page, `${base}/plan`)
  t.same(await page.locator('.plan h2').allTextContents(), ['FreeCurrent', 'Pro', 'Scale'])
  t.match(await page.locator('.plan-current').textContent(), /100,000.*256 MiB/s)
  t.equal(
    await page.getByRole('button', { name: /^Switch to/ }).count(),
    0,
    'paid plans are not self-serve',
  )
  t.match(
    await page.locator('#upgrade-help').textContent(),
    `cairn plan set --email ${email} <plan>`,
  )
  await shoot(page, 'plan')

  await srv.operator('plan.set', { email, plan: 'pro' })
  await page.reload()
  await ready(page)
  t.match(await page.locator('.plan-current h2').textContent(), /^Pro/)
  await page.getByRole('button', { name: 'Switch to Free' }).click()
  await page.getByRole('dialog').getByRole('button', { name: 'Switch to Free' }).click()
  await page.locator('.plan-current h2', { hasText: /^Free/ }).waitFor()
  t.equal((await v1(base, key, 'GET', '/usage')).body.plan.id, 'free', '/v1 sees the free plan')

  const refused = await page.evaluate(async () => {
    const token = document.querySelector<HTMLMetaElement>('meta[name="csrf-token"]')!.content
    const res = await fetch('/dashboard/api/plan', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-csrf-token': token },
      body: '{"plan":"scale"}',
    })
    return [res.status, (await res.json()).error.code]
  })
  t.same(refused, [403, 'plan_not_self_serve'], 'a paid plan cannot be picked by hand')
  t.equal((await v1(base, key, 'GET', '/usage')).body.plan.id, 'free')
  t.same(errors, [])
})

t.test('an operator who sells plans: self-serve plans and an upgrade link', { skip }, async (t) => {
  const { base, page, email, key } = await signedIn(t, 'sells', {
    plans: {
      plans: [plan('free', 0, true), plan('team', 20, true), plan('enterprise', 500, false)],
      default: 'free',
      upgradeUrl: 'https://billing.example/upgrade',
    },
  })
  await open(page, `${base}/plan`)
  const link = page.getByRole('link', { name: 'Upgrade to Enterprise' })
  const href = new URL((await link.getAttribute('href')) ?? '')
  t.equal(href.origin + href.pathname, 'https://billing.example/upgrade')
  t.equal(href.searchParams.get('plan'), 'enterprise')
  t.equal(href.searchParams.get('email'), email)
  t.equal(await page.locator('#upgrade-help').count(), 0, 'no "ask the operator" note')
  await shoot(page, 'plan-self-serve')
  await page.getByRole('button', { name: 'Switch to Team' }).click()
  await page.getByRole('dialog').getByRole('button', { name: 'Switch to Team' }).click()
  await page.locator('.plan-current h2', { hasText: /^Team/ }).waitFor()
  t.equal((await v1(base, key, 'GET', '/usage')).body.plan.id, 'team')
})

t.test('change the password, then delete the account', { skip }, async (t) => {
  const { srv, base, browser, page, errors, email, key } = await signedIn(t, 'acct')
  t.equal((await v1(base, key, 'POST', '/namespaces', { name: 'stuff' })).status, 201)
  t.equal((await v1(base, key, 'PUT', '/stuff/a', { value: 1 })).status, 201)
  const elsewhere = await (await newContext(browser, base)).newPage()
  await logIn(elsewhere, base, email)
  await elsewhere.waitForURL(`${base}/`)

  await open(page, `${base}/account`)
  t.match(await page.locator('.details').textContent(), email)
  await shoot(page, 'account')
  const form = page.locator('#password-form')
  const next = 'a new and longer secret'
  await form.getByLabel('Current password').fill('not it at all')
  await form.getByLabel('New password', { exact: true }).fill(next)
  await form.getByLabel('New password again').fill(`${next}!`)
  await form.getByRole('button', { name: 'Change password' }).click()
  await t.resolves(form.locator('.field-error', { hasText: 'differ' }).waitFor())
  await form.getByLabel('New password again').fill(next)
  await form.getByRole('button', { name: 'Change password' }).click()
  await t.resolves(form.getByRole('alert').filter({ hasText: 'not right' }).waitFor())
  await form.getByLabel('Current password').fill(PASSWORD)
  await form.getByRole('button', { name: 'Change password' }).click()
  await t.resolves(form.getByRole('status').filter({ hasText: 'was changed' }).waitFor())

  const status = (p: typeof page) =>
    p.evaluate(() => fetch('/dashboard/api/me').then((r) => r.status))
  t.equal(await status(page), 200, 'this browser stays signed in')
  t.equal(await status(elsewhere), 401, 'the other one is signed out')
  await logIn(elsewhere, base, email)
  await t.resolves(elsewhere.getByRole('alert').filter({ hasText: 'do not match' }).waitFor())
  await logIn(elsewhere, base, email, next)
  await elsewhere.waitForURL(`${base}/`)

  await page.getByRole('button', { name: 'Delete account…' }).click()
  const dialog = page.getByRole('dialog')
  await dialog.getByLabel(`Type ${email} to confirm`).fill(email)
  await dialog.getByLabel('Password').fill(next)
  await shoot(page, 'account-delete-dialog')
  await dialog.getByRole('button', { name: 'Delete my account' }).click()
  await page.waitForURL(`${base}/signup`)
  t.equal((await v1(base, key, 'GET', '/namespaces')).status, 401, 'its API keys are gone')
  t.equal(await status(elsewhere), 401, 'every session ended')
  await logIn(page, base, email, next)
  await t.resolves(page.getByRole('alert').filter({ hasText: 'do not match' }).waitFor())
  const list = await srv.operator('account.list', {})
  t.notOk(
    list.accounts.some((a: { email: string }) => a.email === email),
    'the account is gone',
  )
  const again = await signUp(page, base, email)
  t.same((await v1(base, again, 'GET', '/namespaces')).body.namespaces, [], 'its data went with it')
  t.same(errors, [])
})
