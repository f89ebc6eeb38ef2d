// Key rules: percent-decoding, `/` and `%2F`, `.` segments, control characters, UTF-8,
// the 512-byte limit.
import t, { type Test } from 'tap'
import { freshNamespace, setup } from './setup.js'

const { api } = await setup(t)
const ns = await freshNamespace(api)

async function expectInvalid(t: Test, rawKey: string) {
  for (const method of ['PUT', 'GET', 'DELETE']) {
    const res = await api.req(
      method,
      `/${ns}/${rawKey}`,
      method === 'PUT' ? { body: { value: 1 } } : {},
    )
    t.equal(res.status, 400, `${method} ${rawKey}`)
    t.equal(res.json?.error?.code, 'invalid_key', `${method} ${rawKey}`)
  }
}

t.test('raw / and %2F are the same character', async (t) => {
  t.equal((await api.put(`/${ns}/a/b/c`, { value: 'raw' })).status, 201)
  const enc = await api.get(`/${ns}/a%2Fb%2Fc`)
  t.equal(enc.status, 200)
  t.equal(enc.text, '{"value":"raw"}')
  const mixed = await api.put(`/${ns}/a%2fb/c`, { value: 'mixed' })
  t.equal(mixed.status, 200, 'lower-case %2f names the same key')
  t.equal(mixed.json.created, false)
  const list = await api.get(`/${ns}?prefix=a`)
  t.same(list.json.keys, ['a/b/c'])
})

t.test('keys are percent-decoded as UTF-8', async (t) => {
  const cases: [string, string][] = [
    ['%C3%A9t%C3%A9', 'été'],
    ['q%3Fx%3D1', 'q?x=1'],
    ['hash%23tag', 'hash#tag'],
    ['sp%20ace', 'sp ace'],
    ['pct%2525', 'pct%25'],
    ['emoji%F0%9F%98%80', 'emoji😀'],
    ['plus+sign', 'plus+sign'],
    ['.hidden', '.hidden'],
    ['a..b', 'a..b'],
    ['...', '...'],
  ]
  for (const [raw, key] of cases) {
    const res = await api.put(`/${ns}/${raw}`, { value: key })
    t.equal(res.status, 201, raw)
  }
  const listed = await api.listAll(ns)
  for (const [raw, key] of cases) {
    t.ok(listed.includes(key), `${raw} lists as ${key}`)
    const got = await api.get(`/${ns}/${encodeURIComponent(key)}`)
    t.equal(got.json?.value, key, `${key} reads back through its canonical encoding`)
  }
})

t.test('. and .. segments are rejected', async (t) => {
  for (const raw of [
    '.',
    '..',
    'a/./b',
    'a/../b',
    'a/.',
    'a/..',
    './a',
    '%2E',
    '%2e%2E',
    'a%2F..%2Fb',
    'a/%2E/b',
  ]) {
    await expectInvalid(t, raw)
  }
})

t.test('control characters are rejected', async (t) => {
  for (const raw of ['a%00b', '%01', 'x%0A', 'tab%09', 'us%1F', 'del%7F']) {
    await expectInvalid(t, raw)
  }
})

t.test('malformed percent-encoding and invalid UTF-8 are rejected', async (t) => {
  for (const raw of [
    'a%',
    'a%2',
    'a%G1',
    '%zz',
    'x%FF',
    '%C3',
    '%C3%28',
    '%C0%AF',
    '%ED%A0%80',
    '%F4%90%80%80',
  ]) {
    await expectInvalid(t, raw)
  }
})

t.test('keys are 1 to 512 bytes after decoding', async (t) => {
  const ascii = 'k'.repeat(512)
  t.equal((await api.put(`/${ns}/${ascii}`, { value: 1 })).status, 201, '512 ASCII bytes')
  await expectInvalid(t, `${ascii}k`)
  const twoByte = '%C3%A9'.repeat(256)
  t.equal((await api.put(`/${ns}/${twoByte}`, { value: 2 })).status, 201, '256 two-byte characters')
  await expectInvalid(t, `${twoByte}x`)
  const put = await api.put(`/${ns}/`, { value: 1 })
  t.equal(put.status, 400, 'an empty key')
  t.equal(put.json?.error?.code, 'invalid_key')
})

t.test('the query string is not part of the key', async (t) => {
  const res = await api.put(`/${ns}/qs?x=1`, { value: 'q' })
  t.equal(res.status, 201)
  t.equal((await api.get(`/${ns}/qs`)).text, '{"value":"q"}')
})
