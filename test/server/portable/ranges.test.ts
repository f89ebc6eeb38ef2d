// Ranges and counts (contract, "Ranges and counts"): start/end on listings of keys and
// entries, forward and reverse, with prefix, limit and cursors; invalid_range; count=1.
import t from 'tap'
import { encodeKey } from '../contract/http.js'
import { freshNamespace, setup } from '../contract/setup.js'

const KEYS = ['a', 'a/1', 'a/2', 'a/3', 'b', 'b/1', 'c', 'é', '😀']

t.test('ranges', async (t) => {
  const { api } = await setup(t)
  const ns = await freshNamespace(api)
  for (const k of KEYS) await api.mustPut(ns, k, { k })
  const list = async (q: Record<string, string>) => {
    const res = await api.get(`/${ns}?${new URLSearchParams(q)}`)
    t.equal(res.status, 200, `${JSON.stringify(q)}: ${res.text}`)
    return res.json
  }
  /** Every page of a listing, following cursors alone. */
  const walk = async (q: Record<string, string>, pick = (j: any) => j.keys) => {
    const seen: string[] = []
    let j = await list(q)
    seen.push(...pick(j))
    while (j.cursor) {
      t.ok(pick(j).length > 0, 'no empty page while a cursor is given')
      j = await list({ cursor: j.cursor })
      seen.push(...pick(j))
    }
    return seen
  }

  t.same((await list({ start: 'a/2', end: 'b/1' })).keys, ['a/2', 'a/3', 'b'], 'start in, end out')
  t.same((await list({ start: 'a/', end: 'b' })).keys, ['a/1', 'a/2', 'a/3'], 'start not a key')
  t.same((await list({ start: 'c' })).keys, ['c', 'é', '😀'], 'start alone')
  t.same((await list({ end: 'a/2' })).keys, ['a', 'a/1'], 'end alone')
  t.same((await list({ start: 'b', end: 'b' })).keys, [], 'an empty range')
  t.same(
    (await list({ start: 'a/2', end: 'c', reverse: '1' })).keys,
    ['b/1', 'b', 'a/3', 'a/2'],
    'reverse',
  )
  t.same((await list({ prefix: 'a/', start: 'a/2' })).keys, ['a/2', 'a/3'], 'within a prefix')
  t.same((await list({ prefix: 'a/', end: 'a/3' })).keys, ['a/1', 'a/2'], 'end within a prefix')
  t.same((await list({ start: 'é', end: '😀' })).keys, ['é'], 'UTF-8 byte order')

  t.same(await walk({ start: 'a/1', end: 'c', limit: '2' }), ['a/1', 'a/2', 'a/3', 'b', 'b/1'])
  t.same(await walk({ start: 'a/1', end: 'c', limit: '2', reverse: '1' }), [
    'b/1',
    'b',
    'a/3',
    'a/2',
    'a/1',
  ])
  t.same(await walk({ start: 'a', end: 'b', limit: '2' }), ['a', 'a/1', 'a/2', 'a/3'])
  t.same(
    await walk({ start: 'a/2', end: 'c', include: 'values', limit: '1' }, (j) =>
      j.entries.map((e: any) => `${e.key}=${e.value.k}`),
    ),
    ['a/2=a/2', 'a/3=a/3', 'b=b', 'b/1=b/1'],
    'entries with a range',
  )
  const exact = await list({ start: 'a/1', end: 'a/3', limit: '2' })
  t.same(exact.keys, ['a/1', 'a/2'])
  t.notOk(exact.cursor, 'a page that ends the range has no cursor')

  // The cursor carries the range: the same one with it is fine, another is refused.
  const first = await list({ start: 'a/1', end: 'c', limit: '2' })
  t.equal((await api.get(`/${ns}?start=a%2F1&end=c&cursor=${first.cursor}`)).status, 200)
  for (const q of ['start=a', 'end=d', 'start=', 'end=']) {
    const res = await api.get(`/${ns}?${q}&cursor=${first.cursor}`)
    t.equal(res.status, 400, q)
    t.equal(res.json.error.code, 'invalid_cursor', q)
  }

  for (const q of [
    'start=c&end=a',
    'prefix=a%2F&start=b',
    'prefix=a%2F&end=b',
    'prefix=a%2F&start=a',
    `start=${'x'.repeat(513)}`.slice(0, 520),
    'count=1&start=c&end=a',
    'count=1&prefix=b&start=a',
    'export=1&start=c&end=a',
  ]) {
    const res = await api.get(`/${ns}?${q}`)
    t.equal(res.status, 400, q)
    t.equal(res.json.error.code, 'invalid_range', q)
  }
})

t.test('counts', async (t) => {
  const { api } = await setup(t)
  const ns = await freshNamespace(api)
  const empty = await api.get(`/${ns}?count=1`)
  t.equal(empty.status, 200)
  t.same(empty.json, { count: 0, bytes: 0, version: '0' })
  let version = ''
  for (const k of KEYS) version = await api.mustPut(ns, k, 12345)
  const bytes = (ks: string[]) => ks.reduce((n, k) => n + Buffer.byteLength(k) + 5, 0)
  const count = async (q: string) => {
    const res = await api.get(`/${ns}?count=1${q}`)
    t.equal(res.status, 200, q)
    return res.json
  }
  t.same(await count(''), { count: KEYS.length, bytes: bytes(KEYS), version })
  t.same(await count('&prefix=a%2F'), { count: 3, bytes: bytes(['a/1', 'a/2', 'a/3']), version })
  t.same(await count('&start=a%2F2&end=b%2F1'), {
    count: 3,
    bytes: bytes(['a/2', 'a/3', 'b']),
    version,
  })
  await api.put(`/${ns}/${encodeKey('gone')}`, { value: 1, ttl: 1 })
  await new Promise((r) => setTimeout(r, 1300))
  const after = await count('&start=g&end=h')
  t.equal(after.count, 0, 'an expired key is not counted')
  const missing = await api.get('/nosuch?count=1')
  t.equal(missing.status, 404)
  t.equal(missing.json.error.code, 'namespace_not_found')
})
