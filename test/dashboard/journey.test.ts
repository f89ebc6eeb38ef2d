// A new user's first session in a real browser against a real server: sign up, copy the
// key, use it on /v1 and watch the overview change, then keys (read-only, scoped, rotate,
// revoke) and log out / log in.
import t from 'tap'
import { startServer } from '../helpers/server.js'
import {
  PASSWORD,
  SHOTS,
  launch,
  newContext,
  open,
  pageErrors,
  ready,
  shoot,
  signUp,
  skip,
  uniqueEmail,
  runCurlExamples,
  v1,
} from './helpers.js'

t.test('sign up, use the key, see usage, manage keys, log out', { skip }, async (t) => {
  const srv = await startServer()
  t.teardown(() => srv.stop())
  const base = srv.url
  const browser = await launch(t)
  const ctx = await newContext(browser, base)
  const page = await ctx.newPage()
  const errors = pageErrors(page)
  const email = uniqueEmail('journey')
  let first = ''

  await t.test('sign-up shows the key once, with a copy button and examples', async (t) => {
    await open(page, `${base}/signup`)
    await shoot(page, 'signup')
    const shown = await signUp(page, base, email)
    t.match(shown, /^cairn_[0-9A-Za-z]{32}$/, 'the full key is on the page')
    await page.getByRole('button', { name: 'Copy key' }).click()
    first = await page.evaluate(() => navigator.clipboard.readText())
    t.equal(first, shown, 'the copy button put the key on the clipboard')
    const curl = await page.locator('.code-block pre').first().textContent()
    t.match(curl, `x-api-key: ${first}`, 'the curl example carries the key')
    t.match(curl, `${base}/v1/namespaces`, 'and this server’s address')
    const client = await page.locator('.code-block pre').nth(1).textContent()
    t.match(client, `new Cairn('${first}', { baseUrl: '${base}/v1' })`, 'a client example too')
    await shoot(page, 'signup-key')
    const cookies = await ctx.cookies(base)
    const session = cookies.find((c) => c.name === 'cairn_session')
    t.ok(session?.httpOnly, 'the session cookie is HttpOnly')
    t.equal(session?.sameSite, 'Lax', 'and SameSite')
    t.notOk(session?.secure, 'not Secure on plain http without a trusted TLS proxy')
  })

  await t.test('the overview charts no data, then the key’s requests after a reload', async (t) => {
    await open(page, `${base}/`)
    t.equal(await page.locator('h1').textContent(), 'Overview')
    t.equal(
      await page.locator('#plan-name').textContent(),
      'Free',
      'a new account is on the free plan',
    )
    t.match(await page.locator('#chart-requests figcaption').textContent(), /No API requests yet/)
    t.equal(await page.locator('#chart-requests canvas').count(), 1, 'uPlot drew the chart anyway')
    const today = page.locator('#chart-requests .chart-data tbody tr').first()
    t.same(await today.locator('td').allTextContents(), Array(10).fill('0'))
    const emptyPlot = await page.locator('#chart-requests .plot').screenshot()
    await shoot(page, 'overview-empty')

    t.equal((await v1(base, first, 'POST', '/namespaces', { name: 'app' })).status, 201)
    for (let i = 0; i < 3; i++)
      t.equal((await v1(base, first, 'PUT', `/app/item-${i}`, { value: { i } })).status, 201)
    t.equal((await v1(base, first, 'GET', '/app/item-1')).status, 200)
    t.equal((await v1(base, first, 'GET', '/app/missing')).status, 404)

    await page.reload()
    await ready(page)
    // reads, writes, deletes, lists, namespace calls, usage calls, patches, transaction ops,
    // prefix deletes, watches opened
    t.same(await today.locator('td').allTextContents(), [
      '2',
      '3',
      '0',
      '0',
      '1',
      '0',
      '0',
      '0',
      '0',
      '0',
    ])
    t.match(await page.locator('#chart-requests figcaption').textContent(), /reads 2, writes 3/)
    const errorsToday = page.locator('#chart-errors .chart-data tbody tr').first().locator('td')
    t.same(await errorsToday.allTextContents(), ['1', '0'], 'the 404 is an error, no 429s')
    t.match(await page.locator('#requests-today').textContent(), /^6 of 100,000$/)
    const drawn = await page.locator('#chart-requests .plot').screenshot()
    t.not(drawn.equals(emptyPlot), true, 'the chart itself is drawn differently')
    t.not(
      await page.locator('#storage-used .used').getAttribute('data-value'),
      '0',
      'storage counted',
    )
    await shoot(page, 'overview')
  })

  let reader = ''
  let scoped = ''
  await t.test('a read-only key is refused a write', async (t) => {
    await open(page, `${base}/keys`)
    t.equal(await page.locator('#keys-table tbody tr').count(), 1, 'the sign-up key is listed')
    t.match(await page.locator('#keys-table tbody').textContent(), first.slice(0, 12))
    t.notMatch(await page.content(), first, 'its secret is not on the keys page')
    await page.getByLabel('Name', { exact: true }).fill('reader')
    await page.getByLabel('Permission').selectOption('read')
    await page.getByRole('button', { name: 'Create key' }).click()
    await page.locator('#new-secret').waitFor()
    reader = (await page.locator('#new-secret').textContent()) ?? ''
    t.match(reader, /^cairn_/)
    t.equal(await page.locator('#keys-table tbody tr').count(), 2)
    t.match(await page.locator('tr[data-key-name="reader"]').textContent(), /read(?!-)/)
    await shoot(page, 'keys-new-secret')
    const shown = await runCurlExamples(
      (await page.locator('.code-block pre').first().textContent()) ?? '',
    )
    t.ok(shown.length >= 2, `the read-only key's examples: ${JSON.stringify(shown)}`)
    t.ok(
      shown.every((r) => r.status === 200),
      'each of them works with that key (it only reads)',
    )
    const write = await v1(base, reader, 'PUT', '/app/item-9', { value: 1 })
    t.equal(write.status, 403, 'a write with the read-only key is refused')
    t.equal(write.body.error.code, 'forbidden')
    t.equal((await v1(base, reader, 'GET', '/app/item-1')).status, 200, 'a read is fine')
  })

  await t.test('a key limited to one namespace cannot use another', async (t) => {
    t.equal((await v1(base, first, 'POST', '/namespaces', { name: 'other' })).status, 201)
    await open(page, `${base}/keys`)
    await page.getByLabel('Name', { exact: true }).fill('app only')
    await page.getByLabel('Only these namespaces').check()
    await page.getByLabel('app', { exact: true }).check()
    await page.getByRole('button', { name: 'Create key' }).click()
    await page.locator('#new-secret').waitFor()
    scoped = (await page.locator('#new-secret').textContent()) ?? ''
    t.match(await page.locator('tr[data-key-name="app only"]').textContent(), /app/)
    const shown = await runCurlExamples(
      (await page.locator('.code-block pre').first().textContent()) ?? '',
    )
    t.ok(
      shown.length >= 2 && shown.every((r) => r.command.includes('/v1/app/')),
      'they use its namespace',
    )
    t.ok(
      shown.every((r) => r.status === 200 || r.status === 201),
      `the scoped key's examples all work: ${JSON.stringify(shown)}`,
    )
    t.equal((await v1(base, scoped, 'PUT', '/app/x', { value: 1 })).status, 201)
    t.equal((await v1(base, scoped, 'PUT', '/other/x', { value: 1 })).status, 403)
  })

  await t.test('rotating the first key kills its old secret', async (t) => {
    await page.getByRole('button', { name: 'Rotate default' }).click()
    await page.getByRole('dialog').getByRole('button', { name: 'Rotate key' }).click()
    await page.getByRole('heading', { name: /New secret for “default”/ }).waitFor()
    const rotated = (await page.locator('#new-secret').textContent()) ?? ''
    t.not(rotated, first)
    t.equal((await v1(base, first, 'GET', '/namespaces')).status, 401, 'the old secret gets 401')
    t.equal((await v1(base, rotated, 'GET', '/namespaces')).status, 200, 'the new one works')
    first = rotated
  })

  await t.test('revoking a key ends it', async (t) => {
    await page.getByRole('button', { name: 'Revoke reader' }).click()
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke key' }).click()
    await page.locator('tr[data-key-name="reader"]').waitFor({ state: 'detached' })
    t.equal((await v1(base, reader, 'GET', '/namespaces')).status, 401)
    t.equal(await page.locator('#new-secret').textContent(), first, "another key's secret stays")
    await shoot(page, 'keys')
    // A key revoked while its secret is shown takes the secret off the page with it.
    await page.getByLabel('Name', { exact: true }).fill('short-lived')
    await page.getByRole('button', { name: 'Create key' }).click()
    await page.getByRole('heading', { name: /New key “short-lived”/ }).waitFor()
    await page.getByRole('button', { name: 'Revoke short-lived' }).click()
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke key' }).click()
    await page.locator('tr[data-key-name="short-lived"]').waitFor({ state: 'detached' })
    t.equal(await page.locator('#new-secret').count(), 0, 'its secret is no longer shown')
  })

  await t.test('the session cookie does not authorise /v1', async (t) => {
    const cookie = (await ctx.cookies(base)).map((c) => `${c.name}=${c.value}`).join('; ')
    const res = await fetch(`${base}/v1/namespaces`, { headers: { cookie } })
    t.equal(res.status, 401)
  })

  await t.test('log out sends the browser to the login page, and pages stay shut', async (t) => {
    await open(page, `${base}/`)
    await page.getByRole('button', { name: 'Log out' }).click()
    await page.waitForURL(`${base}/login`)
    await ready(page)
    t.equal(await page.locator('h1').textContent(), 'Log in to Cairn')
    await shoot(page, 'login')
    await page.goto(`${base}/keys`)
    t.equal(page.url(), `${base}/login?next=%2Fkeys`, 'a private page redirects to log in')
    const me = await page.evaluate(() => fetch('/dashboard/api/me').then((r) => r.status))
    t.equal(me, 401, 'the API says so too')
  })

  await t.test('logging in again lands on the page asked for', async (t) => {
    await ready(page)
    await page.getByLabel('Password').fill('not the password')
    await page.getByLabel('Email').fill(email)
    await page.getByRole('button', { name: 'Log in' }).click()
    await t.resolves(page.getByRole('alert').filter({ hasText: 'do not match' }).waitFor())
    await page.getByLabel('Password').fill(PASSWORD)
    await page.getByRole('button', { name: 'Log in' }).click()
    await page.waitForURL(`${base}/keys`)
    await ready(page)
    t.equal(await page.locator('h1').textContent(), 'API keys')
  })

  t.same(errors, [], 'no script errors on any page')
  t.comment(`screenshots: ${SHOTS}`)
})
