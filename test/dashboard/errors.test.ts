// The dashboard in a real browser when the server answers its first call with an error that
// is not "sign in" (storage refusing for a moment, a rate limit): it says so and offers to
// try again, rather than leaving a blank page that claims to be loading.
import t from 'tap'
import { serverAndPage, signedIn, skip, uniqueEmail } from './helpers.js'

t.test('a page whose /me fails with a 503 says so and offers to try again', { skip }, async (t) => {
  const { base, page, errors } = await signedIn(t, 'errors')
  await page.route('**/dashboard/api/me', (route) =>
    route.fulfill({
      status: 503,
      headers: { 'content-type': 'application/json', 'retry-after': '1' },
      body: '{"error":{"code":"unavailable","message":"Storage cannot take this request for the moment."}}',
    }),
  )
  await page.goto(`${base}/keys`)
  await page.getByRole('heading', { name: 'The dashboard could not load' }).waitFor()
  t.match(await page.getByRole('alert').textContent(), /Storage cannot take this request/)
  t.equal(await page.locator('#app').getAttribute('aria-busy'), null, 'no longer busy')
  await page.unroute('**/dashboard/api/me')
  await page.getByRole('link', { name: 'Try again' }).click()
  await page.getByRole('heading', { name: 'API keys' }).waitFor()
  t.pass('and trying again loads the page')
  t.same(errors, [], 'no script errors')
})

t.test('a sign-up that came without a session says to sign in next', { skip }, async (t) => {
  const { base, page } = await serverAndPage(t)
  // As when the server made the account but could not store a session: no cookie, no token.
  await page.route('**/dashboard/api/signup', async (route) => {
    const real = await route.fetch()
    const body = { ...(await real.json()), csrf: '' }
    await route.fulfill({
      status: 201,
      contentType: 'application/json',
      body: JSON.stringify(body),
    })
  })
  await page.goto(`${base}/signup`)
  await page.getByLabel('Email').fill(uniqueEmail('nosession'))
  await page.getByLabel('Password').fill('long enough pw')
  await page.getByRole('button', { name: /sign up/i }).click()
  await page.getByRole('heading', { name: 'Welcome to Cairn' }).waitFor()
  t.match(await page.locator('main').textContent(), /then sign in with your email and password/)
  t.match(await page.locator('main').textContent(), /cairn_[A-Za-z0-9]{32}/, 'the key is shown')
})
