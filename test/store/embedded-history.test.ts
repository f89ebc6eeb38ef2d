// The embedded store's reads at a point: each version's value and metadata as written, through
// the Store seam, on a real engine in a real directory.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { openEmbeddedStore } from '../../server/store/embedded.js'

t.test('getAt, listAt and versions give each version with its metadata', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-store-history-'))
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }))
  const store = await openEmbeddedStore(dir, 'always')
  t.teardown(() => store.close())
  const h = store.history!
  t.ok(h, 'the embedded store reads at a point')
  await store.createNamespace('n')
  await h.setWindow('n', { seconds: 3600, bytes: 1 << 20 })
  const one = await store.put('n', 'k', Buffer.from('1'), { metadata: Buffer.from('{"a":1}') })
  const two = await store.put('n', 'k', Buffer.from('"two"'))
  await store.put('n', 'other', Buffer.from('true'))
  await store.delete('n', 'k')
  const got = await h.getAt('n', 'k', { version: one.version })
  t.same(
    { value: got?.value.toString(), metadata: got?.metadata?.toString(), version: got?.version },
    { value: '1', metadata: '{"a":1}', version: one.version },
  )
  t.same((await h.getAt('n', 'k', { version: two.version }))?.value.toString(), '"two"')
  t.equal(await h.getAt('n', 'k', { version: two.version + 2 }), undefined, 'deleted since')
  const versions = await h.versions('n', 'k')
  t.same(
    versions.map((v) => [
      v.version,
      v.deleted ?? false,
      v.value?.toString(),
      v.metadata?.toString(),
    ]),
    [
      [two.version + 2, true, undefined, undefined],
      [two.version, false, '"two"', undefined],
      [one.version, false, '1', '{"a":1}'],
    ],
  )
  const page = await h.listAt(
    'n',
    { include: { values: true, metadata: true } },
    { version: one.version },
  )
  t.same(
    page.entries?.map((e) => [e.key, e.value?.toString(), e.metadata?.toString() ?? null]),
    [['k', '1', '{"a":1}']],
  )
  t.equal(page.version, one.version)
  const w = await h.window('n')
  t.ok(w.bytes > 0, 'history bytes counted')
  t.equal(w.from.version, 0)
  const code = await h.getAt('n', 'k', { version: 99 }).then(
    () => 'resolved',
    (err) => err.code,
  )
  t.equal(code, 'INVALID_POINT')
})
