// stat(): a key's version, size and expiry without reading its value.
import t from 'tap'
import { open } from '../../engine/index.js'
import { errorCode, sleep, tempDir } from './helpers.js'

t.test('stat reports version, key-plus-value bytes and expiry', async (t) => {
  const dir = tempDir(t, 'stat')
  let db = await open(dir)
  await db.createNamespace('s')
  t.equal(await db.stat('s', 'missing'), undefined, 'a missing key')
  const raw = Buffer.from('{"a":1}')
  const put = await db.put('s', 'clé', raw)
  const st = await db.stat('s', 'clé')
  t.same(st, { version: put.version, bytes: Buffer.byteLength('clé') + raw.length }, 'raw bytes')
  t.equal(db.namespaceStats('s')?.bytes, st?.bytes, 'the same bytes the namespace counts')
  // Long enough to outlast a slow fsync of the put itself.
  const ttl = await db.put('s', 'short', raw, { ttlMs: 1000 })
  const withTtl = await db.stat('s', 'short')
  t.equal(withTtl?.version, ttl.version)
  t.ok(withTtl?.expiresAt && withTtl.expiresAt > Date.now(), 'expiresAt while it lives')
  await sleep(1100)
  t.equal(await db.stat('s', 'short'), undefined, 'an expired key is missing to stat too')
  await db.delete('s', 'clé')
  t.equal(await db.stat('s', 'clé'), undefined, 'a deleted key')
  const again = await db.put('s', 'k', { n: 1 })
  await db.close()
  db = await open(dir)
  t.equal((await db.stat('s', 'k'))?.version, again.version, 'the same after reopen')
  t.equal(await errorCode(db.stat('nope', 'k')), 'NAMESPACE_NOT_FOUND')
  await db.close()
  t.equal(await errorCode(db.stat('s', 'k')), 'CLOSED')
})

t.test('open creates a missing directory, and a fresh database is empty', async (t) => {
  const dir = `${tempDir(t, 'fresh')}/a/b/c`
  const db = await open(dir)
  t.same(db.namespaces(), [])
  t.equal(db.stats().keys, 0)
  const first = await db.createNamespace('n')
  t.equal(first, true, 'createNamespace resolves true when it made the namespace')
  t.equal(await db.createNamespace('n'), false, 'and false when it existed')
  t.equal((await db.put('n', 'k', 1)).version > 0, true)
  await db.close()
})
