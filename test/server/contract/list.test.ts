// GET /{ns}: UTF-8 byte order, prefix, limit, cursors.
import t from 'tap'
import { utf8Compare } from './http.js'
import { freshNamespace, setup } from './setup.js'

const { api } = await setup(t)

t.test('keys list in UTF-8 byte order', async (t) => {
  const ns = await freshNamespace(api)
  const keys = [
    'b',
    'a',
    'B',
    'a/b',
    'a0',
    'é',
    '\u{1F600}',
    '\uFFFD',
    'z',
    '~',
    'aa',
    'a b',
    '\u00ff',
  ]
  for (const k of keys) await api.mustPut(ns, k, k)
  const res = await api.get(`/${ns}`)
  t.equal(res.status, 200)
  t.same(res.json.keys, [...keys].sort(utf8Compare))
  t.equal(res.json.cursor, undefined, 'no cursor when nothing remains')
  t.same(Object.keys(res.json), ['keys', 'version'])
  // In UTF-16 order U+1F600 would come before U+FFFD; in UTF-8 it comes after.
  t.ok(res.json.keys.indexOf('\uFFFD') < res.json.keys.indexOf('\u{1F600}'))
})

t.test('an empty namespace lists no keys; a missing one is 404', async (t) => {
  const ns = await freshNamespace(api)
  const res = await api.get(`/${ns}`)
  t.same(res.json, { keys: [], version: '0' })
  const missing = await api.get('/nosuchns')
  t.equal(missing.status, 404)
  t.equal(missing.json.error.code, 'namespace_not_found')
})

t.test('prefix filters keys', async (t) => {
  const ns = await freshNamespace(api)
  for (const k of ['user/1', 'user/2', 'user/10', 'users', 'use', 'other', 'é/1', 'é/2'])
    await api.mustPut(ns, k, 1)
  t.same((await api.get(`/${ns}?prefix=user%2F`)).json.keys, ['user/1', 'user/10', 'user/2'])
  t.same((await api.get(`/${ns}?prefix=user`)).json.keys, ['user/1', 'user/10', 'user/2', 'users'])
  t.same((await api.get(`/${ns}?prefix=%C3%A9`)).json.keys, ['é/1', 'é/2'])
  t.same((await api.get(`/${ns}?prefix=nothing`)).json.keys, [])
  t.equal((await api.get(`/${ns}?prefix=`)).json.keys.length, 8, 'an empty prefix lists everything')
})

t.test('limit must be an integer from 1 to 1000', async (t) => {
  const ns = await freshNamespace(api)
  for (const k of ['a', 'b', 'c']) await api.mustPut(ns, k, 1)
  for (const limit of ['0', '1001', '-1', 'abc', '1.5', '1e2', '10x']) {
    const res = await api.get(`/${ns}?limit=${limit}`)
    t.equal(res.status, 400, `limit=${limit}`)
    t.equal(res.json?.error?.code, 'invalid_limit', `limit=${limit}`)
  }
  const one = await api.get(`/${ns}?limit=1`)
  t.same(one.json.keys, ['a'])
  t.type(one.json.cursor, 'string')
  t.same((await api.get(`/${ns}?limit=1000`)).json.keys, ['a', 'b', 'c'])
})

t.test(
  'cursor pages cover every key once and are never empty while cursor is present',
  async (t) => {
    const ns = await freshNamespace(api)
    const keys = Array.from({ length: 30 }, (_, i) => `k${String(i).padStart(2, '0')}`)
    await Promise.all(keys.map((k) => api.mustPut(ns, k, k)))
    for (const limit of [1, 7, 10, 15, 29, 30, 31]) {
      const seen: string[] = []
      let cursor: string | undefined
      let pages = 0
      do {
        const q = new URLSearchParams({ limit: String(limit) })
        if (cursor) q.set('cursor', cursor)
        const res = await api.get(`/${ns}?${q}`)
        t.equal(res.status, 200)
        if (cursor !== undefined)
          t.ok(res.json.keys.length > 0, 'a page reached by a cursor is not empty')
        t.ok(res.json.keys.length <= limit)
        seen.push(...res.json.keys)
        cursor = res.json.cursor
        if (cursor !== undefined)
          t.ok(res.json.keys.length > 0, 'a page with a cursor is not empty')
        pages++
      } while (cursor && pages < 100)
      t.same(seen, keys, `limit ${limit}: every key once, in order`)
      t.equal(pages, Math.ceil(keys.length / limit), `limit ${limit}: no trailing empty page`)
    }
  },
)

t.test('a cursor carries its prefix; another prefix or garbage is invalid_cursor', async (t) => {
  const ns = await freshNamespace(api)
  for (const k of ['a1', 'a2', 'a3', 'b1', 'b2']) await api.mustPut(ns, k, 1)
  const first = await api.get(`/${ns}?prefix=a&limit=2`)
  t.same(first.json.keys, ['a1', 'a2'])
  const cursor = encodeURIComponent(first.json.cursor)
  const next = await api.get(`/${ns}?prefix=a&limit=2&cursor=${cursor}`)
  t.same(next.json.keys, ['a3'])
  t.equal(next.json.cursor, undefined)

  const other = await api.get(`/${ns}?prefix=b&limit=2&cursor=${cursor}`)
  t.equal(other.status, 400, 'cursor from another prefix')
  t.equal(other.json.error.code, 'invalid_cursor')
  const alone = await api.get(`/${ns}?limit=2&cursor=${cursor}`)
  t.equal(alone.status, 200, 'a cursor alone continues its walk')
  t.same(alone.json.keys, ['a3'], 'with the prefix it carries')
  const empty = await api.get(`/${ns}?prefix=&limit=2&cursor=${cursor}`)
  t.equal(empty.status, 400, 'an explicit empty prefix is another prefix')
  t.equal(empty.json.error.code, 'invalid_cursor')
  for (const bad of ['garbage!!', '%FF%FE', 'AAAA', 'x']) {
    const res = await api.get(`/${ns}?cursor=${bad}`)
    t.equal(res.status, 400, `cursor=${bad}`)
    t.equal(res.json?.error?.code, 'invalid_cursor', `cursor=${bad}`)
  }
})

t.test('the default limit is 1000', async (t) => {
  const ns = await freshNamespace(api)
  const keys = Array.from({ length: 1001 }, (_, i) => `k${String(i).padStart(4, '0')}`)
  for (let i = 0; i < keys.length; i += 50)
    await Promise.all(keys.slice(i, i + 50).map((k) => api.mustPut(ns, k, 0)))
  const res = await api.get(`/${ns}`)
  t.equal(res.json.keys.length, 1000)
  t.type(res.json.cursor, 'string')
  const rest = await api.get(`/${ns}?cursor=${encodeURIComponent(res.json.cursor)}`)
  t.same(rest.json.keys, ['k1000'])
  t.equal(rest.json.cursor, undefined)
})

t.test('listing while keys are written: no repeats, no skips of stable keys', async (t) => {
  const ns = await freshNamespace(api)
  const stable = Array.from({ length: 200 }, (_, i) => `s${String(i).padStart(3, '0')}`)
  for (let i = 0; i < stable.length; i += 50)
    await Promise.all(stable.slice(i, i + 50).map((k) => api.mustPut(ns, k, 0)))
  const seen: string[] = []
  let cursor: string | undefined
  let n = 0
  do {
    const q = new URLSearchParams({ limit: '17' })
    if (cursor) q.set('cursor', cursor)
    const res = await api.get(`/${ns}?${q}`)
    seen.push(...res.json.keys)
    cursor = res.json.cursor
    // Writes land before, inside and after the part already walked.
    await api.mustPut(ns, `s${String(n * 7).padStart(3, '0')}x${n}`, n)
    await api.mustPut(ns, `a${n}`, n)
    n++
  } while (cursor)
  t.equal(new Set(seen).size, seen.length, 'no key twice')
  t.same(
    stable.filter((k) => !seen.includes(k)),
    [],
    'every stable key was seen',
  )
  t.same(seen, [...seen].sort(utf8Compare), 'the walk is in order')
})
