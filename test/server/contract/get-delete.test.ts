// GET and DELETE /{ns}/{key}: bodies, ETag, 304, X-Expires-At, 404s, If-Match and If-None-Match.
import t from 'tap'
import { freshNamespace, setup } from './setup.js'

const { api } = await setup(t)
const ns = await freshNamespace(api)

t.test('GET returns only the value, with ETag', async (t) => {
  const put = await api.put(`/${ns}/g`, { value: { a: [1, 2] } })
  const res = await api.get(`/${ns}/g`)
  t.equal(res.status, 200)
  t.same(Object.keys(res.json), ['value'], 'nothing else in the body')
  t.same(res.json.value, { a: [1, 2] })
  t.equal(res.headers.etag, `"${put.json.version}"`)
  t.equal(res.headers['x-expires-at'], undefined, 'no X-Expires-At without a TTL')
  t.match(res.headers['content-type'], /^application\/json/)
})

t.test('X-Expires-At in unix seconds when the key has a TTL', async (t) => {
  const before = Math.floor(Date.now() / 1000)
  await api.put(`/${ns}/ttl`, { value: 1, ttl: 3600 })
  const after = Math.ceil(Date.now() / 1000)
  const res = await api.get(`/${ns}/ttl`)
  const at = Number(res.headers['x-expires-at'])
  t.ok(at >= before + 3600 && at <= after + 3600, `X-Expires-At ${at} is now + 3600`)

  const when = Math.floor(Date.now() / 1000) + 7200
  await api.put(`/${ns}/exp`, { value: 1, expiresAt: when })
  t.equal((await api.get(`/${ns}/exp`)).headers['x-expires-at'], String(when))
})

t.test('If-None-Match answers 304 while the version is current', async (t) => {
  const v = (await api.put(`/${ns}/inm`, { value: 'x' })).json.version
  const same = await api.get(`/${ns}/inm`, { headers: { 'if-none-match': `"${v}"` } })
  t.equal(same.status, 304)
  t.equal(same.text, '', 'no body')
  t.equal(same.headers.etag, `"${v}"`)

  const other = await api.get(`/${ns}/inm`, { headers: { 'if-none-match': '"0"' } })
  t.equal(other.status, 200)

  const v2 = (await api.put(`/${ns}/inm`, { value: 'y' })).json.version
  const changed = await api.get(`/${ns}/inm`, { headers: { 'if-none-match': `"${v}"` } })
  t.equal(changed.status, 200, 'a stale ETag gets the new value')
  t.equal(changed.text, '{"value":"y"}')
  t.equal(changed.headers.etag, `"${v2}"`)
})

t.test('404 key_not_found and namespace_not_found on GET', async (t) => {
  const key = await api.get(`/${ns}/never`)
  t.equal(key.status, 404)
  t.equal(key.json.error.code, 'key_not_found')
  t.type(key.json.error.message, 'string')
  const nsMissing = await api.get('/nosuchns/k')
  t.equal(nsMissing.status, 404)
  t.equal(nsMissing.json.error.code, 'namespace_not_found')
})

t.test('DELETE answers {deleted: true} once, then key_not_found', async (t) => {
  await api.put(`/${ns}/d`, { value: 1 })
  const res = await api.del(`/${ns}/d`)
  t.equal(res.status, 200)
  t.same(res.json, { deleted: true })
  t.equal((await api.get(`/${ns}/d`)).status, 404)
  const again = await api.del(`/${ns}/d`)
  t.equal(again.status, 404)
  t.equal(again.json.error.code, 'key_not_found')
  const nsMissing = await api.del('/nosuchns/k')
  t.equal(nsMissing.status, 404)
  t.equal(nsMissing.json.error.code, 'namespace_not_found')
})

t.test('DELETE with If-Match', async (t) => {
  const v = (await api.put(`/${ns}/dm`, { value: 1 })).json.version
  const wrong = await api.del(`/${ns}/dm`, { headers: { 'if-match': '"nope"' } })
  t.equal(wrong.status, 412)
  t.equal(wrong.json.error.code, 'precondition_failed')
  t.equal((await api.get(`/${ns}/dm`)).status, 200, 'the key stays')
  const right = await api.del(`/${ns}/dm`, { headers: { 'if-match': `"${v}"` } })
  t.equal(right.status, 200)
  t.same(right.json, { deleted: true })
  const missing = await api.del(`/${ns}/dm`, { headers: { 'if-match': `"${v}"` } })
  t.equal(missing.status, 412, 'If-Match on a missing key')
  t.equal(missing.json.error.code, 'precondition_failed')
})

t.test('DELETE with If-None-Match: refused while the key (or that version) is there', async (t) => {
  const v = (await api.put(`/${ns}/dn`, { value: 1 })).json.version
  for (const tag of ['*', `"${v}"`]) {
    const refused = await api.del(`/${ns}/dn`, { headers: { 'if-none-match': tag } })
    t.equal(refused.status, 412, `If-None-Match: ${tag}`)
    t.equal(refused.json.error.code, 'precondition_failed')
  }
  t.equal((await api.get(`/${ns}/dn`)).status, 200, 'the key stays')
  const other = await api.del(`/${ns}/dn`, { headers: { 'if-none-match': '"999999"' } })
  t.equal(other.status, 200, 'another version: deleted')
  const gone = await api.del(`/${ns}/dn`, { headers: { 'if-none-match': '*' } })
  t.equal(gone.status, 404, 'nothing there: key_not_found, as without a condition')
})

t.test('read-your-writes across many interleaved writes', async (t) => {
  for (let i = 0; i < 50; i++) {
    await api.put(`/${ns}/ryw`, { value: i })
    const got = await api.get(`/${ns}/ryw`)
    if (got.json.value !== i) {
      t.fail(`read ${got.text} after writing ${i}`)
      return
    }
  }
  t.pass('every read saw the write before it')
})
