// The dashboard's guards: CSRF from another origin (in a real browser, whose cookies ride
// along because 127.0.0.1 on another port is the same site), the same-origin and token
// checks one by one, cookie flags, log-in throttling, and the client address behind a proxy.
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { logIn, preSession } from '../helpers/dashboard-api.js'
import { startServer } from '../helpers/server.js'
import { PASSWORD, launch, newContext, open, signUp, skip, uniqueEmail, v1 } from './helpers.js'

/** A page on another origin that tries to make the signed-in dashboard create namespaces. */
async function attackerSite(t: { teardown(fn: () => unknown): void }, target: string) {
  const html = `<!doctype html><title>free prizes</title>
<form id="f" method="POST" enctype="text/plain" action="${target}/dashboard/api/namespaces">
<input name='{"name":"evilform","x":"' value='"}'></form>
<script>
window.attempts = Promise.allSettled([
  fetch('${target}/dashboard/api/logout', { method: 'POST', mode: 'no-cors', credentials: 'include' }),
  fetch('${target}/dashboard/api/namespaces', { method: 'POST', mode: 'no-cors', credentials: 'include',
    headers: { 'content-type': 'text/plain' }, body: '{"name":"evilfetch"}' }),
  fetch('${target}/dashboard/api/namespaces', { method: 'POST', credentials: 'include',
    headers: { 'content-type': 'application/json', 'x-csrf-token': 'guess' }, body: '{"name":"evilcors"}' }),
]).then((r) => r.map((x) => x.status))
</script>`
  const srv = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' })
    res.end(html)
  })
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise((r) => srv.close(r)))
  return `http://127.0.0.1:${(srv.address() as AddressInfo).port}/`
}

t.test('state-changing calls from another origin fail', { skip }, async (t) => {
  const srv = await startServer()
  t.teardown(() => srv.stop())
  const base = srv.url
  const browser = await launch(t)
  const ctx = await newContext(browser, base)
  const page = await ctx.newPage()
  const key = await signUp(page, base, uniqueEmail('csrf'))
  const evil = await attackerSite(t, base)
  t.not(new URL(evil).origin, new URL(base).origin, 'the attacker is another origin')

  const attack = await ctx.newPage()
  await attack.goto(evil)
  const outcomes = await attack.evaluate(() => (window as any).attempts)
  t.same(outcomes, ['fulfilled', 'fulfilled', 'rejected'], 'the CORS fetch is not even let through')
  const posted = attack.waitForNavigation()
  await attack.evaluate(() => (document.getElementById('f') as HTMLFormElement).submit())
  const answer = await posted
  t.equal(answer?.status(), 403, 'the form post is refused')
  t.match(await attack.textContent('body'), /"code":"forbidden"/)

  const names = (await v1(base, key, 'GET', '/namespaces')).body.namespaces
  t.same(names, [], 'no namespace was created')
  await open(page, `${base}/namespaces`)
  t.equal(page.url(), `${base}/namespaces`, 'the forged log-out did not sign the user out')

  // The same call from the dashboard's own page works: the refusals above are the guard's.
  const own = await page.evaluate(async () => {
    const token = document.querySelector<HTMLMetaElement>('meta[name="csrf-token"]')!.content
    const res = await fetch('/dashboard/api/namespaces', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-csrf-token': token },
      body: '{"name":"mine"}',
    })
    return res.status
  })
  t.equal(own, 201)
})

t.test('the guards one by one, cookies, throttling', async (t) => {
  const srv = await startServer()
  t.teardown(() => srv.stop())
  const base = srv.url
  const { email, apiKey } = await srv.createAccount(uniqueEmail('guard'), {
    password: PASSWORD,
  })
  const s = await logIn(base, email, PASSWORD)
  t.equal(s.status, 200)
  t.ok(s.cookie && s.csrf)
  const call = (headers: Record<string, string>, name: string) =>
    fetch(`${base}/dashboard/api/namespaces`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ name }),
    })
  const good = { cookie: s.cookie!, origin: base, 'x-csrf-token': s.csrf }

  await t.test('each missing piece is refused', async (t) => {
    t.equal(
      (await call({ ...good, origin: 'http://evil.example' }, 'a1')).status,
      403,
      'other origin',
    )
    const { origin: _o, ...noOrigin } = good
    t.equal((await call(noOrigin, 'a2')).status, 403, 'no Origin or Referer')
    t.equal(
      (await call({ ...noOrigin, referer: `${base}/namespaces` }, 'a3')).status,
      201,
      'Referer will do',
    )
    t.equal(
      (await call({ ...good, 'sec-fetch-site': 'same-site' }, 'a4')).status,
      403,
      'same-site is not enough',
    )
    const { 'x-csrf-token': _x, ...noToken } = good
    const res = await call(noToken, 'a5')
    t.equal(res.status, 403, 'no token')
    t.equal(((await res.json()) as any).error.code, 'csrf_failed')
    t.equal(
      (await call({ ...good, 'x-csrf-token': 'x'.repeat(43) }, 'a6')).status,
      403,
      'wrong token',
    )
    t.equal((await call({ origin: base, 'x-csrf-token': s.csrf }, 'a7')).status, 401, 'no session')
    t.equal((await call(good, 'a8')).status, 201, 'everything in place')
    const pre = await preSession(base)
    const login = (headers: Record<string, string>) =>
      fetch(`${base}/dashboard/api/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: base, ...headers },
        body: JSON.stringify({ email, password: PASSWORD }),
      }).then((r) => r.status)
    t.equal(await login({ cookie: pre.cookie }), 403, 'a log-in form needs its token')
    t.equal(await login({ 'x-csrf-token': pre.token }), 403, 'and the cookie it matches')
    t.equal(await login({ cookie: pre.cookie, 'x-csrf-token': pre.token }), 200)
  })

  await t.test('cookies are HttpOnly and SameSite; Secure needs a trusted TLS proxy', async (t) => {
    t.match(
      s.headers.getSetCookie()[0],
      /^cairn_session=[^;]+; SameSite=Lax; Max-Age=\d+; Path=\/; HttpOnly$/,
    )
    t.match(
      s.headers.getSetCookie()[1],
      /^cairn_pre=; SameSite=Strict; Max-Age=0; Path=\/; HttpOnly$/,
      "signed in, the log-in form's token is cleared",
    )
    const pre = await preSession(base, { 'x-forwarded-proto': 'https' })
    t.notMatch(pre.setCookie, /Secure/, 'X-Forwarded-Proto is ignored without --trust-proxy')
    t.match(pre.setCookie, /SameSite=Strict/)
  })

  await t.test('pages and calls need a session; the API has no open doors', async (t) => {
    const page = await fetch(`${base}/keys`, { redirect: 'manual' })
    t.equal(page.status, 302)
    t.equal(page.headers.get('location'), '/login?next=%2Fkeys')
    t.equal((await fetch(`${base}/dashboard/api/me`)).status, 401)
    t.equal((await fetch(`${base}/dashboard/api/nothing`)).status, 404)
    const login = await fetch(`${base}/login`)
    t.equal(login.headers.get('x-frame-options'), 'DENY')
    t.match(login.headers.get('content-security-policy'), "script-src 'self'")
    const head = await fetch(`${base}/dashboard/api/namespaces/a1/watch`, {
      method: 'HEAD',
      headers: { cookie: s.cookie!, origin: base },
    })
    t.equal(head.status, 405, 'HEAD of the live view: a watch is a stream')
    const lost = await fetch(`${base}/no/such/page`)
    t.equal(lost.status, 404)
    t.match(lost.headers.get('content-type'), 'text/html')
  })

  await t.test('export, import and restores: the same guards, and never /v1', async (t) => {
    t.equal((await v1(base, apiKey, 'POST', '/namespaces', { name: 'moved' })).status, 201)
    t.equal((await v1(base, apiKey, 'PUT', '/moved/k', { value: 1 })).status, 201)
    const api = `${base}/dashboard/api/namespaces/moved`
    const ndjson = { ...good, 'content-type': 'application/x-ndjson' }
    const importing = (headers: Record<string, string>) =>
      fetch(`${api}/import?mode=replace`, {
        method: 'POST',
        headers,
        body: '{"key":"x","value":2}\n',
      })
    const { 'x-csrf-token': _x, ...noToken } = ndjson
    t.equal((await importing(noToken)).status, 403, 'an import without the token')
    t.equal((await importing({ ...ndjson, origin: 'http://evil.example' })).status, 403)
    const { cookie: _c, ...noCookie } = ndjson
    t.equal((await importing(noCookie)).status, 401, 'an import without a session')
    const restoring = (headers: Record<string, string>) =>
      fetch(`${api}/restore`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({ at: new Date().toISOString() }),
      })
    t.equal((await restoring(noToken)).status, 403, 'a restore without the token')
    const { 'x-csrf-token': _y, ...versionNoToken } = good
    const again = await fetch(`${api}/restore-version?key=k`, {
      method: 'POST',
      headers: { ...versionNoToken, 'content-type': 'application/json' },
      body: '{"version":"1"}',
    })
    t.equal(again.status, 403, 'a version restored without the token')
    t.same((await v1(base, apiKey, 'GET', '/moved')).body.keys, ['k'], 'none of them applied')

    const exporting = (headers: Record<string, string>, method = 'GET') =>
      fetch(`${api}/export`, { method, headers })
    t.equal(
      (await exporting({ cookie: s.cookie!, 'sec-fetch-site': 'cross-site' })).status,
      403,
      'an export started from another site (it counts against the quota)',
    )
    t.equal((await exporting({ origin: base })).status, 401, 'an export without a session')
    t.equal((await exporting({ cookie: s.cookie!, origin: base }, 'HEAD')).status, 405)
    const got = await exporting({ cookie: s.cookie!, referer: `${base}/namespaces/moved` })
    t.equal(got.status, 200)
    t.equal(got.headers.get('content-disposition'), 'attachment; filename="moved.ndjson"')
    t.match(
      await got.text(),
      /\{"key":"k","value":1,"version":"\d+"\}\n\{"end":true,"entries":1\}\n$/,
    )
    const withCookie = await fetch(`${base}/v1/moved?export=1`, { headers: { cookie: s.cookie! } })
    t.equal(withCookie.status, 401, 'the cookie does not export through /v1')
  })

  await t.test('log-in attempts are throttled per account', async (t) => {
    for (let i = 0; i < 5; i++) t.equal((await logIn(base, email, 'wrong password')).status, 401)
    const blocked = await logIn(base, email, PASSWORD)
    t.equal(blocked.status, 429, 'even the right password waits')
    t.equal(blocked.body.error.code, 'rate_limited')
    t.ok(Number(blocked.headers.get('retry-after')) > 0, 'Retry-After says how long')
    const other = await srv.createAccount(uniqueEmail('other'), { password: PASSWORD })
    t.equal((await logIn(base, other.email, PASSWORD)).status, 200, 'other accounts are not locked')
    t.equal((await logIn(base, 'nobody@example.com', PASSWORD)).status, 401, 'unknown email: 401')
  })
})

t.test('behind a trusted proxy', async (t) => {
  const srv = await startServer({ args: ['--trust-proxy'] })
  t.teardown(() => srv.stop())
  const base = srv.url

  await t.test('cookies get Secure when the proxy says the browser used TLS', async (t) => {
    const pre = await preSession(base, { 'x-forwarded-proto': 'https' })
    t.match(pre.setCookie, /; Secure$/)
    const plain = await preSession(base, { 'x-forwarded-proto': 'http' })
    t.notMatch(plain.setCookie, /Secure/)
  })

  await t.test('failed log-ins count against the last X-Forwarded-For entry', async (t) => {
    // 20 failures from one proxy-reported address, each for a different email so the
    // per-account limit stays out of it.
    for (let i = 0; i < 20; i++) {
      const r = await logIn(base, `nobody${i}@example.com`, 'wrong password', {
        'x-forwarded-for': `198.51.100.${i}, 203.0.113.7`,
      })
      t.equal(r.status, 401)
    }
    const sameLast = await logIn(base, 'someone@example.com', 'wrong password', {
      'x-forwarded-for': '192.0.2.1, 203.0.113.7',
    })
    t.equal(sameLast.status, 429, 'a forged first entry does not escape the limit')
    const otherLast = await logIn(base, 'someone@example.com', 'wrong password', {
      'x-forwarded-for': '198.51.100.1, 203.0.113.8',
    })
    t.equal(otherLast.status, 401, 'another client is not held up')
  })
})

t.test('after log-in, next never leaves the dashboard', { skip }, async (t) => {
  const srv = await startServer()
  t.teardown(() => srv.stop())
  const base = srv.url
  const browser = await launch(t)
  const email = uniqueEmail('next')
  await srv.createAccount(email, { password: PASSWORD })
  const landing = async (next: string) => {
    const page = await (await newContext(browser, base)).newPage()
    await open(page, `${base}/login?next=${next}`)
    await page.getByLabel('Email').fill(email)
    await page.getByLabel('Password').fill(PASSWORD)
    await page.getByRole('button', { name: 'Log in' }).click()
    await page.waitForURL((u) => !u.pathname.startsWith('/login'))
    const url = new URL(page.url())
    await page.context().close()
    return url
  }
  for (const next of [
    '%2F%5Cevil.example%2Fphish',
    '/%09/evil2.example',
    '//evil.example',
    '/%2F/evil.example',
    'https://evil.example/',
    'javascript:alert(1)',
    '/%5C%5Cevil.example',
    '%2F%250D%2F%2Fevil.example',
  ]) {
    const url = await landing(next)
    t.equal(url.origin, base, `next=${next} stays on this origin`)
    t.equal(url.pathname, '/', `next=${next} goes to the overview`)
  }
  const good = await landing(encodeURIComponent('/keys'))
  t.equal(`${good.origin}${good.pathname}`, `${base}/keys`, 'a path of the dashboard is followed')
})
