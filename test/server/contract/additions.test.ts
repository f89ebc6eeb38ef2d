// The contract's additions, against a real server: per-namespace versions, metadata, PATCH,
// transactions, listing entries and deleting by prefix. backends.test.ts runs this file again
// on Redis Cluster.
import t from 'tap'
import { cli } from './cli.js'
import { Client } from './http.js'
import { freshNamespace, otherAccount, plansFile, setup } from './setup.js'

const { srv, api, email } = await setup(t, {
  plans: plansFile({ id: 'small', maxValueBytes: 1000, burst: 30, ratePerSecond: 1 }),
})
/** An account on the small plan: values up to 1000 bytes, a burst of 30. */
const small = await otherAccount(srv, 'small')

const patch = (path: string, body: unknown, headers?: Record<string, string>) =>
  api.req('PATCH', path, { body, headers })
const tx = (ns: string, ops: unknown[]) => api.post(`/${ns}`, { ops })

t.test('versions count per namespace: a new one is at 0, its first write is 1', async (t) => {
  const a = await freshNamespace(api)
  const b = await freshNamespace(api)
  t.equal((await api.put(`/${a}/k`, { value: 1 })).json.version, '1')
  t.equal((await api.put(`/${a}/k`, { value: 2 })).json.version, '2')
  t.equal(
    (await api.put(`/${b}/k`, { value: 1 })).json.version,
    '1',
    'another namespace does not show',
  )
  const other = await otherAccount(srv)
  await other.createNamespace('mine')
  t.equal((await other.put('/mine/k', { value: 1 })).json.version, '1', 'nor another account')
  t.equal((await api.get(`/${a}`)).json.version, '2', 'a listing carries the version')
  t.equal((await api.del(`/${a}/k`)).status, 200)
  t.equal((await api.get(`/${a}`)).json.version, '3', 'a delete is a write')
  t.equal((await api.del(`/${a}/k`)).status, 404)
  t.equal((await api.get(`/${a}`)).json.version, '3', 'deleting a missing key writes nothing')
  t.equal(
    (await api.put(`/${a}/k`, { value: 1 }, { headers: { 'if-match': '"03"' } })).status,
    412,
    'a version matches only its exact digits',
  )
  t.equal((await api.del(`/namespaces/${a}`)).status, 200)
  await api.createNamespace(a)
  t.equal((await api.put(`/${a}/k`, { value: 1 })).json.version, '1', 'made again, it starts over')
})

t.test('metadata: kept with the value, replaced by every PUT', async (t) => {
  const ns = await freshNamespace(api)
  const put = await api.put(
    `/${ns}/k`,
    '{"value":1,"metadata":{"tag":"a","n":12345678901234567890}}',
  )
  t.equal(put.status, 201)
  t.equal((await api.get(`/${ns}/k`)).text, '{"value":1}', 'GET alone answers the value')
  t.equal(
    (await api.get(`/${ns}/k?metadata=1`)).text,
    '{"value":1,"metadata":{"tag":"a","n":12345678901234567890}}',
  )
  await api.mustPut(ns, 'k', 2)
  t.equal((await api.get(`/${ns}/k?metadata=1`)).text, '{"value":2,"metadata":null}')
  for (const metadata of [1, 'x', [1], true])
    t.equal((await api.put(`/${ns}/k`, { value: 1, metadata })).json.error.code, 'invalid_metadata')
  const big = { s: 'x'.repeat(1020) }
  t.equal(
    (await api.put(`/${ns}/k`, { value: 1, metadata: big })).json.error.code,
    'invalid_metadata',
  )
  t.equal((await api.put(`/${ns}/k`, '{"value":1,"value":2}')).json.error.code, 'invalid_json')
  t.equal((await api.get(`/${ns}/k`)).text, '{"value":2}', 'a refused PUT changed nothing')
})

t.test('PATCH: increments exact at any size, expiry and metadata in place', async (t) => {
  const ns = await freshNamespace(api)
  let r = await patch(`/${ns}/n`, '{"increment":9007199254740993}')
  t.equal(r.status, 201, 'a missing key starts at 0 and is created')
  t.equal(r.text, '{"version":"1","value":9007199254740993}', 'exact past 2^53 (JSON text)')
  t.equal(r.headers.etag, '"1"')
  r = await patch(`/${ns}/n`, '{"increment":-99999999999999999999999999}')
  t.equal(r.status, 200)
  t.equal(r.text, '{"version":"2","value":-99999999990992800745259006}')
  t.equal((await api.get(`/${ns}/n`)).text, '{"value":-99999999990992800745259006}')
  await api.mustPut(ns, 's', 'text', { metadata: { a: 1 } })
  t.equal((await patch(`/${ns}/s`, { increment: 1 })).json.error.code, 'not_a_number')
  await api.mustPut(ns, 'f', 1.5)
  t.equal((await patch(`/${ns}/f`, { increment: 1 })).status, 409)
  r = await patch(`/${ns}/s`, { ttl: 100 })
  t.equal(r.status, 200)
  t.same(Object.keys(r.json), ['version'])
  const got = await api.get(`/${ns}/s?metadata=1`)
  t.equal(got.text, '{"value":"text","metadata":{"a":1}}', 'the value and metadata stay')
  t.match(got.headers['x-expires-at'], /^\d+$/, 'the expiry is set')
  t.equal((await patch(`/${ns}/s`, { persist: true })).status, 200)
  t.equal((await api.get(`/${ns}/s`)).headers['x-expires-at'], undefined, 'persist removes it')
  t.equal((await patch(`/${ns}/s`, { metadata: null })).status, 200)
  t.equal((await api.get(`/${ns}/s?metadata=1`)).text, '{"value":"text","metadata":null}')
  t.equal((await patch(`/${ns}/none`, { ttl: 5 })).json.error.code, 'key_not_found')
  const v = (await api.get(`/${ns}/s`)).headers.etag
  t.equal((await patch(`/${ns}/s`, { metadata: { b: 2 } }, { 'if-match': '"1"' })).status, 412)
  t.equal((await patch(`/${ns}/s`, { metadata: { b: 2 } }, { 'if-match': v! })).status, 200)
  // If-None-Match, as on PUT and DELETE: refused while the key (or that version) is there.
  const inm = await patch(`/${ns}/s`, { increment: 1 }, { 'if-none-match': '*' })
  t.equal(inm.status, 412, 'If-None-Match: * on a key that exists')
  t.equal(inm.json.error.code, 'precondition_failed')
  t.notOk('index' in inm.json.error, 'one op: no index')
  const now = (await api.get(`/${ns}/s`)).headers.etag
  t.equal((await patch(`/${ns}/s`, { ttl: 60 }, { 'if-none-match': now! })).status, 412)
  t.equal((await patch(`/${ns}/s`, { ttl: 60 }, { 'if-none-match': '"999999"' })).status, 200)
  const fresh = await patch(`/${ns}/inm-new`, { increment: 5 }, { 'if-none-match': '*' })
  t.same([fresh.status, fresh.json.value], [201, 5], 'a missing key: made')
  for (const body of [
    {},
    { nope: 1 },
    '{"increment":1.0}',
    '{"increment":1e3}',
    { increment: '1' },
    { persist: false },
    { ttl: 5, persist: true },
    { ttl: 5, expiresAt: 9999999999 },
    [1],
  ])
    t.equal(
      (await patch(`/${ns}/s`, body)).json?.error?.code,
      'invalid_patch',
      JSON.stringify(body),
    )
  t.equal((await patch(`/${ns}/s`, { ttl: 0 })).json.error.code, 'invalid_ttl')
  t.equal((await patch(`/${ns}/s`, '{"ttl":1,"ttl":2}')).json.error.code, 'invalid_json')
})

t.test('50 concurrent increments give exactly +50', async (t) => {
  const ns = await freshNamespace(api)
  await api.mustPut(ns, 'c', 100)
  const all = await Promise.all(
    Array.from({ length: 50 }, () => patch(`/${ns}/c`, { increment: 1 })),
  )
  t.same(new Set(all.map((r) => r.status)), new Set([200]))
  t.equal((await api.get(`/${ns}/c`)).text, '{"value":150}')
  t.equal(new Set(all.map((r) => r.json.value)).size, 50, 'each saw its own result')
})

t.test('20 concurrent check-and-put transactions on one counter lose no update', async (t) => {
  const ns = await freshNamespace(api)
  await api.mustPut(ns, 'c', 0)
  // Each client reads, then writes n+1 only if the counter is still at the version it read;
  // a refused one reads again. Every one lands exactly once.
  const client = async () => {
    for (let tries = 0; tries < 200; tries++) {
      const got = await api.get(`/${ns}/c`)
      const v = got.headers.etag!.slice(1, -1)
      const n = JSON.parse(got.text).value as number
      const r = await tx(ns, [
        { op: 'check', key: 'c', version: v },
        { op: 'put', key: 'c', value: n + 1 },
      ])
      if (r.status === 200) return tries
      if (r.status !== 412 || r.json.error.index !== 0) throw new Error(r.text)
    }
    throw new Error('no luck in 200 tries')
  }
  await Promise.all(Array.from({ length: 20 }, client))
  t.equal((await api.get(`/${ns}/c`)).text, '{"value":20}')
})

t.test('transactions: all or nothing, in order, consecutive versions', async (t) => {
  const ns = await freshNamespace(api)
  const v1 = await api.mustPut(ns, 'a', { x: 1 }, { metadata: { m: true } })
  let r = await tx(ns, [
    { op: 'check', key: 'a', version: v1 },
    { op: 'get', key: 'a', metadata: true },
    { op: 'get', key: 'missing' },
    { op: 'put', key: 'b', value: [1, 2], ttl: 60 },
    { op: 'increment', key: 'n', by: 5 },
    { op: 'delete', key: 'a' },
    { op: 'delete', key: 'never' },
    { op: 'check', key: 'never', version: null },
  ])
  t.equal(r.status, 200, r.text)
  t.equal(r.json.version, '4')
  const [check, get, missing, put, inc, del, none, absent] = r.json.results
  t.same(check, {})
  t.same(get, { found: true, value: { x: 1 }, version: '1', metadata: { m: true } })
  t.same(missing, { found: false })
  t.same(put, { created: true, version: '2' })
  t.same(inc, { value: 5, version: '3' })
  t.same(del, { deleted: true })
  t.same(none, { deleted: false }, 'a delete of a missing key writes nothing')
  t.same(absent, {})
  t.equal((await api.get(`/${ns}/a`)).status, 404)

  // A failed check applies nothing and names the op.
  r = await tx(ns, [
    { op: 'put', key: 'c', value: 1 },
    { op: 'check', key: 'b', version: '1' },
  ])
  t.equal(r.status, 412)
  t.equal(r.json.error.code, 'precondition_failed')
  t.equal(r.json.error.index, 1)
  t.equal((await api.get(`/${ns}/c`)).status, 404, 'nothing applied')
  r = await tx(ns, [
    { op: 'put', key: 'c', value: 1 },
    { op: 'put', key: 'b', value: 1, ifNoneMatch: '*' },
  ])
  t.equal(r.json.error.index, 1)
  t.equal(r.status, 412)
  await api.mustPut(ns, 's', 'str')
  r = await tx(ns, [
    { op: 'put', key: 'c', value: 1 },
    { op: 'increment', key: 's', by: 1 },
  ])
  t.equal(r.status, 409)
  t.same([r.json.error.code, r.json.error.index], ['not_a_number', 1])
  t.equal((await api.get(`/${ns}/c`)).status, 404, 'still nothing applied')
  t.equal((await api.get(`/${ns}`)).json.version, '5', 'no failed transaction took a version')
  const sns = await freshNamespace(small)
  r = await small.post(`/${sns}`, {
    ops: [
      { op: 'put', key: 'c', value: 1 },
      { op: 'put', key: 'd', value: 'x'.repeat(2000) },
    ],
  })
  t.same([r.status, r.json.error.code, r.json.error.index], [413, 'value_too_large', 1])
  t.equal((await small.get(`/${sns}/c`)).status, 404, 'nothing applied')
})

t.test('invalid_transaction, with the index of the op to blame', async (t) => {
  const ns = await freshNamespace(api)
  const bad = async (body: unknown, index?: number) => {
    const r = await api.post(`/${ns}`, body)
    t.equal(r.json?.error?.code, 'invalid_transaction', JSON.stringify(body).slice(0, 80))
    t.equal(r.status, 400)
    t.equal(r.json?.error?.index, index)
  }
  await bad({})
  await bad({ ops: {} })
  await bad({ ops: [] })
  await bad({ ops: Array.from({ length: 1001 }, () => ({ op: 'get', key: 'k' })) })
  await bad(
    {
      ops: [
        { op: 'get', key: 'k' },
        { op: 'frobnicate', key: 'k' },
      ],
    },
    1,
  )
  // Names every object has (Object.prototype's) are no ops either.
  for (const op of ['constructor', 'toString', '__proto__', 'hasOwnProperty'])
    await bad(
      JSON.parse(`{"ops":[{"op":"get","key":"k"},{"op":${JSON.stringify(op)},"key":"k"}]}`),
      1,
    )
  await bad({ ops: [{ op: 'get' }] }, 0)
  await bad({ ops: [{ op: 'put', key: 'k' }] }, 0)
  await bad({ ops: [{ op: 'get', key: 'k', extra: 1 }] }, 0)
  await bad({ ops: [{ op: 'check', key: 'k', version: 7 }] }, 0)
  await bad({ ops: [{ op: 'increment', key: 'k', by: 1.5 }] }, 0)
  await bad({ ops: [{ op: 'get', key: '' }] }, 0)
  await bad(
    {
      ops: [
        { op: 'put', key: 'k', value: 1 },
        { op: 'get', key: 'k' },
        { op: 'delete', key: 'k' },
      ],
    },
    2,
  )
  const dup = await api.post(`/${ns}`, '{"ops":[{"op":"get","key":"k","key":"j"}]}')
  t.equal(dup.json.error.code, 'invalid_json', 'an op may not repeat a member')
})

t.test('each op is a request in usage and takes a token', async (t) => {
  const ns = await freshNamespace(small)
  const before = (await small.get('/usage')).json.today
  const r = await small.post(`/${ns}`, {
    ops: Array.from({ length: 10 }, (_, i) => ({ op: 'put', key: `k${i}`, value: i })),
  })
  t.equal(r.status, 200)
  t.ok(Number(r.headers['ratelimit-remaining']) <= 30 - 10, 'ten tokens went')
  const after = (await small.get('/usage')).json.today
  t.equal(after.operations.transaction - before.operations.transaction, 10)
  const sum = Object.values(after.operations as Record<string, number>).reduce((a, b) => a + b, 0)
  t.equal(sum, after.requests, 'the operations add up to requests')
  // A burst-sized transaction is refused when the bucket cannot pay for it.
  const big = await small.post(`/${ns}`, {
    ops: Array.from({ length: 40 }, (_, i) => ({ op: 'get', key: `k${i}` })),
  })
  t.equal(big.status, 429)
  t.equal(big.json.error.code, 'rate_limited')
})

t.test('a read-only key may check and get only', async (t) => {
  const ns = await freshNamespace(api)
  const ro = new Client(
    srv.baseUrl,
    (await cli(srv, ['key', 'create', '--email', email, '--name', 'ro', '--permission', 'read']))
      .secret,
  )
  t.equal((await ro.post(`/${ns}`, { ops: [{ op: 'get', key: 'k' }] })).status, 200)
  const w = await ro.post(`/${ns}`, { ops: [{ op: 'put', key: 'k', value: 1 }] })
  t.equal(w.status, 403)
  t.equal(w.json.error.code, 'forbidden')
})

t.test('listing entries: values, metadata, reverse, the version, cursors', async (t) => {
  const ns = await freshNamespace(api)
  for (const k of ['a', 'b', 'c', 'd'])
    await api.mustPut(ns, k, { k }, k === 'b' ? { metadata: { m: 1 } } : {})
  await api.mustPut(ns, 'e', 5, { ttl: 100 })
  let r = await api.get(`/${ns}?include=values,metadata&limit=2`)
  t.equal(r.status, 200)
  t.same(r.json.entries, [
    { key: 'a', version: '1', value: { k: 'a' }, metadata: null },
    { key: 'b', version: '2', value: { k: 'b' }, metadata: { m: 1 } },
  ])
  t.equal(r.json.version, '5')
  const next = await api.get(`/${ns}?cursor=${r.json.cursor}`)
  t.same(
    next.json.entries.map((e: { key: string }) => e.key),
    ['c', 'd', 'e'],
    'a cursor alone continues the same listing',
  )
  t.equal(
    (await api.get(`/${ns}?cursor=${r.json.cursor}&include=metadata`)).json.error.code,
    'invalid_cursor',
  )
  t.equal(
    (await api.get(`/${ns}?cursor=${r.json.cursor}&reverse=1`)).json.error.code,
    'invalid_cursor',
  )
  t.equal(
    (await api.get(`/${ns}?cursor=${r.json.cursor}&include=values,metadata&reverse=0`)).status,
    200,
  )
  r = await api.get(`/${ns}?include=metadata&prefix=e`)
  t.equal(r.json.entries.length, 1)
  t.match(r.json.entries[0], { key: 'e', version: '5', metadata: null })
  t.type(r.json.entries[0].expiresAt, 'number')
  t.notOk('value' in r.json.entries[0])
  r = await api.get(`/${ns}?reverse=1&limit=3`)
  t.same(r.json.keys, ['e', 'd', 'c'])
  r = await api.get(`/${ns}?reverse=1&cursor=${r.json.cursor}`)
  t.same(r.json.keys, ['b', 'a'])
  t.notOk(r.json.cursor)
})

t.test('a page with values ends after the entry that passes 4 MiB', async (t) => {
  const ns = await freshNamespace(api)
  const r0 = await api.get(`/${ns}?include=values`)
  t.same(r0.json.entries, [], 'an empty namespace lists no entries')
  for (let i = 0; i < 6; i++) await api.mustPut(ns, `k${i}`, 'x'.repeat(900 * 1024))
  const page = await api.get(`/${ns}?include=values`)
  t.equal(page.json.entries.length, 5, 'the fifth value takes the page past 4 MiB')
  t.ok(page.json.cursor, 'and more remain')
  const rest = await api.get(`/${ns}?cursor=${page.json.cursor}`)
  t.same(
    rest.json.entries.map((e: { key: string }) => e.key),
    ['k5'],
  )
})

t.test('an empty namespace lists at version 0', async (t) => {
  const ns = await freshNamespace(api)
  const r = await api.get(`/${ns}?include=values`)
  t.same(r.json.entries, [], 'an empty namespace lists no entries')
  t.equal(r.json.version, '0')
})

t.test('DELETE /{ns}?prefix= deletes each key as a write of its own', async (t) => {
  const ns = await freshNamespace(api)
  for (const k of ['p/1', 'p/2', 'p/3', 'q/1']) await api.mustPut(ns, k, 1)
  t.equal((await api.del(`/${ns}?prefix=`)).json.error.code, 'invalid_prefix')
  t.equal((await api.del(`/${ns}`)).json.error.code, 'invalid_prefix')
  const r = await api.del(`/${ns}?prefix=p%2F`)
  t.equal(r.status, 200)
  t.same(r.json, { deleted: 3 })
  t.same(await api.listAll(ns), ['q/1'])
  t.equal((await api.get(`/${ns}`)).json.version, '7', 'three writes, three versions')
  t.same((await api.del(`/${ns}?prefix=zz`)).json, { deleted: 0 })
})
