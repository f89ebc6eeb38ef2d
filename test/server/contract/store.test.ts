// PUT /{ns}/{key}: created vs replaced, versions, conditional writes and every error the
// contract names for it.
import t from 'tap'
import { plansFile, setup, freshNamespace } from './setup.js'
import { Client, sendLargeBody } from './http.js'

const { srv, api } = await setup(t, { plans: plansFile({ id: 'small', maxValueBytes: 1000 }) })
const ns = await freshNamespace(api)

t.test('a new key is 201 created, a replaced one 200, each with a new version', async (t) => {
  const first = await api.put(`/${ns}/k1`, { value: 1 })
  t.equal(first.status, 201)
  t.same(Object.keys(first.json).sort(), ['created', 'version'])
  t.equal(first.json.created, true)
  t.type(first.json.version, 'string')
  t.equal(first.headers.etag, `"${first.json.version}"`)
  t.ok(first.headers['x-request-id'], 'X-Request-Id')
  for (const h of ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset'])
    t.match(first.headers[h], /^\d+$/, h)

  const second = await api.put(`/${ns}/k1`, { value: 2 })
  t.equal(second.status, 200)
  t.equal(second.json.created, false)
  t.not(second.json.version, first.json.version, 'version changes on every write')
  t.equal(second.headers.etag, `"${second.json.version}"`)

  const same = await api.put(`/${ns}/k1`, { value: 2 })
  t.not(same.json.version, second.json.version, 'even when the value is the same')

  const got = await api.get(`/${ns}/k1`)
  t.equal(got.status, 200)
  t.equal(got.text, '{"value":2}')
  t.equal(got.headers.etag, `"${same.json.version}"`)
})

t.test('invalid_json for bodies that are not JSON', async (t) => {
  for (const body of [
    '{"value":',
    'value=1',
    '{"value":1}x',
    "{'value':1}",
    '{"value":01}',
    '\u00ff',
  ]) {
    const res = await api.put(`/${ns}/bad`, body)
    t.equal(res.status, 400, body)
    t.equal(res.json?.error?.code, 'invalid_json', body)
    t.type(res.json?.error?.message, 'string')
  }
  const got = await api.get(`/${ns}/bad`)
  t.equal(got.json?.error?.code, 'key_not_found', 'nothing was stored')
})

t.test(
  'an envelope that repeats a member is invalid_json; inside value anything goes',
  async (t) => {
    for (const body of [
      '{"value":"a","value":"b"}',
      '{"value":"a","ttl":5,"ttl":60}',
      '{"value":1,"\\u0076alue":2}',
      '{"other":1,"value":2,"other":3}',
    ]) {
      const res = await api.put(`/${ns}/dup`, body)
      t.equal(res.status, 400, body)
      t.equal(res.json?.error?.code, 'invalid_json', body)
      t.match(res.json?.error?.message, /twice/, body)
    }
    t.equal((await api.get(`/${ns}/dup`)).status, 404, 'nothing was stored')
    const inside = '{"value":{"a":1,"a":2}}'
    t.equal((await api.put(`/${ns}/dup`, inside)).status, 201, 'a repeated member inside value')
    t.equal((await api.get(`/${ns}/dup`)).text, inside, 'is kept exactly as sent')
    const ns2 = await api.post('/namespaces', '{"name":"dupa","name":"dupb"}')
    t.equal(ns2.status, 400, 'namespace creation too')
    t.equal(ns2.json?.error?.code, 'invalid_json')
  },
)

t.test('missing_value when the body has no value member', async (t) => {
  for (const body of [{}, { ttl: 60 }, { Value: 1 }]) {
    const res = await api.put(`/${ns}/nv`, body)
    t.equal(res.status, 400, JSON.stringify(body))
    t.equal(res.json?.error?.code, 'missing_value', JSON.stringify(body))
  }
  for (const body of ['[1]', '5', '"value"', 'null']) {
    const res = await api.put(`/${ns}/nv`, body)
    t.equal(res.status, 400, `a body that is not an object: ${body}`)
  }
  t.equal((await api.get(`/${ns}/nv`)).status, 404)
})

t.test('invalid_ttl for bad ttl or expiresAt, or both at once', async (t) => {
  const now = Math.floor(Date.now() / 1000)
  const bodies = [
    { value: 1, ttl: 0 },
    { value: 1, ttl: -5 },
    { value: 1, ttl: 1.5 },
    { value: 1, ttl: '60' },
    { value: 1, ttl: true },
    { value: 1, expiresAt: now - 10 },
    { value: 1, expiresAt: 'tomorrow' },
    { value: 1, expiresAt: now + 60.5 },
    { value: 1, ttl: 60, expiresAt: now + 60 },
  ]
  for (const body of bodies) {
    const res = await api.put(`/${ns}/ttlbad`, body)
    t.equal(res.status, 400, JSON.stringify(body))
    t.equal(res.json?.error?.code, 'invalid_ttl', JSON.stringify(body))
  }
  t.equal((await api.get(`/${ns}/ttlbad`)).status, 404, 'nothing was stored')
})

t.test('namespace_not_found: no implicit create', async (t) => {
  const res = await api.put('/nosuchns/k', { value: 1 })
  t.equal(res.status, 404)
  t.equal(res.json.error.code, 'namespace_not_found')
  const list = await api.get('/namespaces')
  t.notOk(
    list.json.namespaces.some((n: { name: string }) => n.name === 'nosuchns'),
    'the namespace was not created',
  )
})

t.test('If-Match and If-None-Match on PUT', async (t) => {
  const v1 = (await api.put(`/${ns}/cond`, { value: 'one' })).json.version

  const wrong = await api.put(`/${ns}/cond`, { value: 'x' }, { headers: { 'if-match': '"nope"' } })
  t.equal(wrong.status, 412)
  t.equal(wrong.json.error.code, 'precondition_failed')
  t.equal((await api.get(`/${ns}/cond`)).text, '{"value":"one"}', 'a failed write changes nothing')

  const right = await api.put(
    `/${ns}/cond`,
    { value: 'two' },
    { headers: { 'if-match': `"${v1}"` } },
  )
  t.equal(right.status, 200)
  t.equal(right.json.created, false)

  const stale = await api.put(`/${ns}/cond`, { value: 'x' }, { headers: { 'if-match': `"${v1}"` } })
  t.equal(stale.status, 412, 'the old version no longer matches')

  const missing = await api.put(
    `/${ns}/cond-missing`,
    { value: 1 },
    { headers: { 'if-match': `"${v1}"` } },
  )
  t.equal(missing.status, 412, 'If-Match on a missing key')
  t.equal(missing.json.error.code, 'precondition_failed')
  t.equal((await api.get(`/${ns}/cond-missing`)).status, 404)

  const exists = await api.put(`/${ns}/cond`, { value: 'x' }, { headers: { 'if-none-match': '*' } })
  t.equal(exists.status, 412, 'If-None-Match: * on an existing key')
  t.equal(exists.json.error.code, 'precondition_failed')

  const fresh = await api.put(
    `/${ns}/cond-new`,
    { value: 1 },
    { headers: { 'if-none-match': '*' } },
  )
  t.equal(fresh.status, 201, 'If-None-Match: * creates a missing key')
  t.equal(fresh.json.created, true)

  // A list matches when any tag does. A weak tag names the same version (docs/api.md): a
  // compressing proxy turns ETags weak, and a client sends back what it got.
  const now = (await api.get(`/${ns}/cond`)).headers.etag!
  const put = (ifMatch: string) =>
    api.put(`/${ns}/cond`, { value: 'y' }, { headers: { 'if-match': ifMatch } })
  t.equal((await put(`"${v1}", ${now}`)).status, 200, 'a list holding the current version')
  const after = (await api.get(`/${ns}/cond`)).headers.etag!
  t.equal((await put(`W/${after}`)).status, 200, 'a weak tag of the current version')
  t.equal((await put(`W/${after}`)).status, 412, 'and not of one before it')
})

t.test('413 value_too_large past the plan limit, and nothing is stored', async (t) => {
  const small = new Client(
    srv.baseUrl,
    (await srv.createAccount(undefined, { plan: 'small' })).apiKey,
  )
  await small.createNamespace('big')
  // The value's JSON text may be exactly maxValueBytes (1000) long.
  const exact = `"${'a'.repeat(998)}"`
  const ok = await small.put('/big/k', `{"value":${exact}}`)
  t.equal(ok.status, 201, 'a value of exactly the limit is accepted')
  const over = await small.put('/big/k', `{"value":"${'b'.repeat(999)}"}`)
  t.equal(over.status, 413, 'one byte over')
  t.equal(over.json?.error?.code, 'value_too_large')
  t.equal((await small.get('/big/k')).text, `{"value":${exact}}`, 'the old value stays')

  // A body far past the limit: the server answers without reading it all.
  const huge = Buffer.from(`{"value":"${'c'.repeat(8 * 1024 * 1024)}"}`)
  const base = new URL(srv.baseUrl).pathname
  const res = await sendLargeBody(
    srv.baseUrl,
    'PUT',
    `${base}/big/huge`,
    { 'x-api-key': small.key, 'content-type': 'application/json' },
    huge,
  )
  t.equal(res.status, 413)
  t.equal(res.json?.error?.code, 'value_too_large')
  t.equal((await small.get('/big/huge')).status, 404)
})

t.test('413 on the default 1 MiB limit too', async (t) => {
  const res = await api.put(`/${ns}/mib`, `{"value":"${'d'.repeat(1024 * 1024)}"}`)
  t.equal(res.status, 413)
  t.equal(res.json?.error?.code, 'value_too_large')
})

t.test(
  '415 unsupported_media_type names the header; json with charset or none is fine',
  async (t) => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/jsonx']) {
      const res = await api.put(`/${ns}/ct`, { value: 1 }, { headers: { 'content-type': type } })
      t.equal(res.status, 415, type)
      t.equal(res.json?.error?.code, 'unsupported_media_type', type)
      t.match(res.json?.error?.message, /content-type/i, 'the message names the header')
    }
    t.equal((await api.get(`/${ns}/ct`)).status, 404, 'nothing was stored')

    const charset = await api.put(
      `/${ns}/ct`,
      { value: 1 },
      { headers: { 'content-type': 'application/json; charset=utf-8' } },
    )
    t.equal(charset.status, 201, 'application/json; charset=utf-8')
    const upper = await api.put(
      `/${ns}/ct`,
      { value: 2 },
      { headers: { 'content-type': 'Application/JSON;charset=UTF-8' } },
    )
    t.equal(upper.status, 200, 'media types are case-insensitive')
    const none = await api.put(`/${ns}/ct`, { value: 3 }, { headers: { 'content-type': null } })
    t.equal(none.status, 200, 'no Content-Type at all')
    t.equal((await api.get(`/${ns}/ct`)).text, '{"value":3}')
  },
)

t.test('50 concurrent If-Match writes on one version: exactly one wins', async (t) => {
  const v = (await api.put(`/${ns}/race`, { value: 'start' })).json.version
  const results = await Promise.all(
    Array.from({ length: 50 }, (_, i) =>
      api.put(`/${ns}/race`, { value: i }, { headers: { 'if-match': `"${v}"` } }),
    ),
  )
  const winners = results.filter((r) => r.status === 200)
  t.equal(winners.length, 1, 'one write wins')
  t.equal(results.filter((r) => r.status === 412).length, 49, 'the others get 412')
  const got = await api.get(`/${ns}/race`)
  t.equal(got.headers.etag, `"${winners[0]?.json.version}"`, 'the winner is what is stored')
})
