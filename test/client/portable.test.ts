// The client's ranges, counts, exports and imports against a real server.
import t from 'tap'
import { BadRequestError, NotFoundError } from '../../client/src/index.js'
import { account, nsName, server } from './helpers.js'

t.test('ranges, count, export and import', async (t) => {
  const srv = await server(t)
  const { kv } = await account(srv)
  const a = nsName('pa')
  const b = nsName('pb')
  await kv.createNamespace(a)
  await kv.createNamespace(b)
  for (const k of ['a', 'b/1', 'b/2', 'c']) await kv.put(a, k, { k, big: 12345678901234567890n })
  await kv.put(a, 'm', 1, { metadata: { owner: 'ana' } })

  t.same((await kv.list(a, { start: 'b', end: 'c' })).keys, ['b/1', 'b/2'])
  const walked: string[] = []
  for await (const k of kv.keys(a, { start: 'b/2', pageSize: 1 })) walked.push(k)
  t.same(walked, ['b/2', 'c', 'm'])
  const es: string[] = []
  for await (const e of kv.entries(a, { end: 'b/2', pageSize: 1 })) es.push(e.key)
  t.same(es, ['a', 'b/1'])
  const c = await kv.count(a, { prefix: 'b/' })
  t.equal(c.count, 2)
  t.ok(c.bytes > 0)
  t.equal(typeof c.version, 'string')
  await t.rejects(kv.count(a, { start: 'z', end: 'a' }), BadRequestError)

  const got = []
  for await (const e of kv.exportNamespace(a)) got.push(e)
  t.same(
    got.map((e) => e.key),
    ['a', 'b/1', 'b/2', 'c', 'm'],
  )
  t.equal((got[0]!.value as { big: bigint }).big, 12345678901234567890n, 'exact integers')
  t.same(got[4]!.metadata, { owner: 'ana' })

  // The raw stream into an import of another namespace.
  const stream = await kv.exportStream(a)
  const r = await kv.importNamespace(b, stream, { mode: 'replace' })
  t.same([r.imported, r.deleted], [5, 0])
  const again = []
  for await (const e of kv.exportNamespace(b)) again.push({ ...e, version: undefined })
  t.same(
    again,
    got.map((e) => ({ ...e, version: undefined })),
    'export, import, export: the same entries',
  )

  // From entries, sync and async.
  const fromEntries = await kv.importNamespace(b, [
    { key: 'x', value: 1n },
    { key: 'y', value: [null], metadata: { z: 1 } },
  ])
  t.equal(fromEntries.imported, 2)
  async function* gen() {
    yield { key: 'p/1', value: 'one' }
    yield '{"key":"p/2","value":"two"}\n'
  }
  const replaced = await kv.importNamespace(b, gen(), { mode: 'replace', prefix: 'p/' })
  t.same([replaced.imported, replaced.deleted], [2, 0])
  t.same(await kv.get(b, 'p/2'), { value: 'two', version: replaced.version })

  const bad = await kv
    .importNamespace(b, ['{"key":"ok","value":1}\n', '{"key":"no"}\n'])
    .catch((e) => e)
  t.ok(bad instanceof BadRequestError)
  t.equal(bad.code, 'invalid_import')
  t.equal(bad.line, 2)
  t.equal(await kv.get(b, 'ok'), null, 'nothing applied')
  await t.rejects(kv.importNamespace(nsName('none'), []), NotFoundError)
  const missing = kv.exportNamespace(nsName('none'))
  await t.rejects(missing.next(), NotFoundError)
})
