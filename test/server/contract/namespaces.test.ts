// POST/GET /namespaces and DELETE /namespaces/{name}; account isolation.
import t from 'tap'
import { freshNamespace, otherAccount, plansFile, setup } from './setup.js'

const { srv, api } = await setup(t, { plans: plansFile({ id: 'two', maxNamespaces: 2 }) })

t.test('create answers 201 with name and createdAt; a second create is 409', async (t) => {
  const before = Date.now()
  const res = await api.post('/namespaces', { name: 'sessions' })
  t.equal(res.status, 201)
  t.same(Object.keys(res.json).sort(), ['createdAt', 'name'])
  t.equal(res.json.name, 'sessions')
  t.match(res.json.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/)
  const at = Date.parse(res.json.createdAt)
  t.ok(at >= before - 2000 && at <= Date.now() + 2000, 'createdAt is now')
  const again = await api.post('/namespaces', { name: 'sessions' })
  t.equal(again.status, 409)
  t.equal(again.json.error.code, 'namespace_exists')
})

t.test('names follow ^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$, case-sensitive', async (t) => {
  for (const name of ['a', 'Z9', 'with_under-score', 'x'.repeat(64), 'Sessions', '0start']) {
    const res = await api.post('/namespaces', { name })
    t.equal(res.status, 201, name)
  }
  const bad = [
    '',
    'x'.repeat(65),
    'a.b',
    '-a',
    '_a',
    'a b',
    'é',
    'a/b',
    'a$',
    'namespaces',
    'usage',
  ]
  for (const name of bad) {
    const res = await api.post('/namespaces', { name })
    t.equal(res.status, 400, JSON.stringify(name))
    t.equal(res.json?.error?.code, 'invalid_namespace', JSON.stringify(name))
  }
  for (const body of [{}, { name: 12 }, { name: null }, { name: ['a'] }]) {
    const res = await api.post('/namespaces', body)
    t.equal(res.status, 400, JSON.stringify(body))
  }
})

t.test('create: invalid_json and 415', async (t) => {
  const res = await api.post('/namespaces', '{"name":')
  t.equal(res.status, 400)
  t.equal(res.json.error.code, 'invalid_json')
  const typed = await api.post(
    '/namespaces',
    { name: 'typed' },
    { headers: { 'content-type': 'text/plain' } },
  )
  t.equal(typed.status, 415)
  t.equal(typed.json.error.code, 'unsupported_media_type')
  t.match(typed.json.error.message, /content-type/i)
})

t.test('list shows name, keys, bytes, createdAt and historyFrom', async (t) => {
  const ns = await freshNamespace(api, 'listed')
  await api.mustPut(ns, 'a', 'hello')
  await api.mustPut(ns, 'b', [1, 2, 3])
  const res = await api.get('/namespaces')
  t.equal(res.status, 200)
  t.same(Object.keys(res.json), ['namespaces'])
  const entry = res.json.namespaces.find((n: { name: string }) => n.name === ns)
  t.ok(entry, 'the namespace is listed')
  t.same(Object.keys(entry).sort(), ['bytes', 'createdAt', 'historyFrom', 'keys', 'name'])
  t.equal(entry.keys, 2)
  t.ok(
    entry.bytes >= 'a'.length + '"hello"'.length + 'b'.length + '[1,2,3]'.length,
    'bytes counts keys plus values',
  )
  t.ok(Number.isFinite(Date.parse(entry.createdAt)))
  t.ok(Number.isFinite(Date.parse(entry.historyFrom)), 'the oldest readable point, a time')
})

t.test('delete removes the namespace and every key in it', async (t) => {
  const ns = await freshNamespace(api, 'doomed')
  await api.mustPut(ns, 'k', 1)
  const res = await api.del(`/namespaces/${ns}`)
  t.equal(res.status, 200)
  t.same(res.json, { deleted: true })
  const get = await api.get(`/${ns}/k`)
  t.equal(get.status, 404)
  t.equal(get.json.error.code, 'namespace_not_found')
  t.notOk(
    (await api.get('/namespaces')).json.namespaces.some((n: { name: string }) => n.name === ns),
  )
  await api.createNamespace(ns)
  t.same(
    (await api.get(`/${ns}`)).json.keys,
    [],
    'a namespace made again with that name starts empty',
  )
  const missing = await api.del('/namespaces/nosuchns')
  t.equal(missing.status, 404)
  t.equal(missing.json.error.code, 'namespace_not_found')
})

t.test('two accounts with the same namespace name see only their own data', async (t) => {
  const other = await otherAccount(srv)
  t.equal(
    (await other.post('/namespaces', { name: 'sessions' })).status,
    201,
    'no clash with the first account',
  )
  await api.mustPut('sessions', 'who', 'first')
  await other.mustPut('sessions', 'who', 'second')
  await other.mustPut('sessions', 'only-other', 1)
  t.equal((await api.get('/sessions/who')).text, '{"value":"first"}')
  t.equal((await other.get('/sessions/who')).text, '{"value":"second"}')
  t.same((await api.get('/sessions')).json.keys, ['who'])
  t.equal((await api.get('/sessions/only-other')).status, 404)
  const names = (await other.get('/namespaces')).json.namespaces.map(
    (n: { name: string }) => n.name,
  )
  t.same(names, ['sessions'], "the other account's namespaces are not listed")
  t.equal((await other.get(`/namespaces`)).json.namespaces[0].keys, 2)
  t.equal((await other.del('/namespaces/sessions')).status, 200)
  t.equal(
    (await api.get('/sessions/who')).status,
    200,
    "deleting the other account's namespace leaves ours",
  )
})

t.test('namespace_quota_exceeded at the plan limit', async (t) => {
  const limited = await otherAccount(srv, 'two')
  t.equal((await limited.post('/namespaces', { name: 'one' })).status, 201)
  t.equal((await limited.post('/namespaces', { name: 'two' })).status, 201)
  const third = await limited.post('/namespaces', { name: 'three' })
  t.equal(third.status, 403)
  t.equal(third.json.error.code, 'namespace_quota_exceeded')
  t.equal((await limited.del('/namespaces/one')).status, 200)
  t.equal(
    (await limited.post('/namespaces', { name: 'three' })).status,
    201,
    'room again after a delete',
  )
})
