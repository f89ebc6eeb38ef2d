// 404 not_found, 405 with Allow, X-Request-Id and CORS.
import t from 'tap'
import { startServer } from '../../helpers/server.js'
import { Client } from './http.js'
import { freshNamespace, plansFile, setup } from './setup.js'

const { api } = await setup(t)
const ns = await freshNamespace(api)
await api.mustPut(ns, 'k', 1)

function allowList(header: string | string[] | undefined): string[] {
  return String(header ?? '')
    .split(',')
    .map((m) => m.trim().toUpperCase())
    .filter(Boolean)
    .sort()
}

t.test('unknown routes are 404 not_found', async (t) => {
  for (const path of ['', '/', '/usage/x', '/namespaces/a/b']) {
    const res = await api.get(path)
    t.equal(res.status, 404, `GET /v1${path}`)
    t.equal(res.json?.error?.code, 'not_found', `GET /v1${path}`)
  }
})

t.test('a known route with the wrong method is 405 with Allow', async (t) => {
  const cases: [string, string, string[]][] = [
    ['POST', `/${ns}/k`, ['DELETE', 'GET', 'PATCH', 'PUT']],
    ['PUT', `/${ns}`, ['DELETE', 'GET', 'POST']],
    ['PATCH', `/${ns}`, ['DELETE', 'GET', 'POST']],
    ['PUT', '/namespaces', ['GET', 'POST']],
    ['DELETE', '/namespaces', ['GET', 'POST']],
    ['GET', `/namespaces/${ns}`, ['DELETE']],
    ['POST', '/usage', ['GET']],
  ]
  for (const [method, path, allow] of cases) {
    const res = await api.req(
      method,
      path,
      method === 'GET' || method === 'DELETE' ? {} : { body: { value: 1 } },
    )
    t.equal(res.status, 405, `${method} ${path}`)
    t.equal(res.json?.error?.code, 'method_not_allowed', `${method} ${path}`)
    const got = allowList(res.headers.allow)
    for (const m of allow)
      t.ok(got.includes(m), `${method} ${path}: Allow has ${m} (${res.headers.allow})`)
    t.notOk(got.includes(method), `${method} ${path}: Allow leaves out ${method}`)
  }
  t.equal((await api.get(`/${ns}/k`)).text, '{"value":1}', 'nothing was changed')
})

t.test('X-Request-Id: echoed when sane, generated otherwise', async (t) => {
  const generated = await api.get(`/${ns}/k`)
  t.match(generated.headers['x-request-id'], /^\S{4,}$/)
  const other = await api.get(`/${ns}/k`)
  t.not(
    other.headers['x-request-id'],
    generated.headers['x-request-id'],
    'each request gets its own',
  )
  const echoed = await api.get(`/${ns}/k`, { headers: { 'x-request-id': 'trace-abc_123' } })
  t.equal(echoed.headers['x-request-id'], 'trace-abc_123')
  const insane = await api.get(`/${ns}/k`, { headers: { 'x-request-id': `x${'y'.repeat(500)}` } })
  t.ok(insane.headers['x-request-id'], 'a generated id replaces an overlong one')
  t.not(insane.headers['x-request-id'], `x${'y'.repeat(500)}`)
  const errored = await api.get('/nosuchns/k')
  t.ok(errored.headers['x-request-id'], 'errors carry it too')
  const unauth = await api.get(`/${ns}/k`, { key: null })
  t.ok(unauth.headers['x-request-id'], '401s carry it too')
})

t.test('CORS preflight is answered without a key', async (t) => {
  const res = await api.req('OPTIONS', `/${ns}/k`, {
    key: null,
    headers: {
      origin: 'https://app.example',
      'access-control-request-method': 'PUT',
      'access-control-request-headers': 'x-api-key, content-type, if-match',
    },
  })
  t.equal(res.status, 204)
  t.equal(res.headers['access-control-allow-origin'], '*')
  const methods = allowList(res.headers['access-control-allow-methods'])
  for (const m of ['GET', 'PUT', 'DELETE']) t.ok(methods.includes(m), `allows ${m}`)
  const headers = String(res.headers['access-control-allow-headers']).toLowerCase()
  for (const h of ['x-api-key', 'authorization', 'content-type', 'if-match', 'if-none-match'])
    t.ok(headers.includes(h), `allows header ${h}`)
  t.match(res.headers['access-control-max-age'], /^\d+$/)

  const nsPre = await api.req('OPTIONS', '/namespaces', {
    key: null,
    headers: { origin: 'https://app.example', 'access-control-request-method': 'POST' },
  })
  t.equal(nsPre.status, 204)
})

t.test('actual responses carry Allow-Origin and expose the API headers', async (t) => {
  const res = await api.get(`/${ns}/k`, { headers: { origin: 'https://app.example' } })
  t.equal(res.status, 200)
  t.equal(res.headers['access-control-allow-origin'], '*')
  const exposed = String(res.headers['access-control-expose-headers']).toLowerCase()
  for (const h of [
    'etag',
    'x-expires-at',
    'ratelimit-limit',
    'ratelimit-remaining',
    'ratelimit-reset',
    'retry-after',
    'x-request-id',
  ])
    t.ok(exposed.includes(h), `exposes ${h}`)
  const err = await api.get('/nosuchns/k', { headers: { origin: 'https://app.example' } })
  t.equal(err.headers['access-control-allow-origin'], '*', 'errors too, so browsers can read them')
})

t.test('a cookie never authorises /v1', async (t) => {
  const res = await api.get(`/${ns}/k`, {
    key: null,
    headers: { cookie: 'session=anything; cairn_session=x' },
  })
  t.equal(res.status, 401)
  t.equal(res.json.error.code, 'unauthorized')
})

t.test('configured CORS origins', async (t) => {
  const srv = await startServer({
    plans: plansFile(),
    args: ['--cors-origins', 'https://a.example,https://b.example'],
  })
  t.teardown(() => srv.stop())
  const acct = await srv.createAccount()
  const other = new Client(srv.baseUrl, acct.apiKey)
  const pre = (origin: string) =>
    other.req('OPTIONS', '/namespaces', {
      key: null,
      headers: { origin, 'access-control-request-method': 'GET' },
    })
  t.equal(
    (await pre('https://b.example')).headers['access-control-allow-origin'],
    'https://b.example',
  )
  const denied = await pre('https://evil.example')
  t.not(denied.headers['access-control-allow-origin'], 'https://evil.example')
  t.not(denied.headers['access-control-allow-origin'], '*')
  const actual = await other.get('/namespaces', { headers: { origin: 'https://a.example' } })
  t.equal(actual.headers['access-control-allow-origin'], 'https://a.example')
  t.match(
    String(actual.headers.vary ?? ''),
    /origin/i,
    'Vary: Origin when the answer depends on it',
  )
})
