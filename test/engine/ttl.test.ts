// Time to live: expiry is exact for reads and listings, survives reopen and compaction.
import t from 'tap'
import { open } from '../../engine/index.js'
import { clearFaults, injectFault } from '../../engine/io.js'
import { crashCopy, errorCode, sleep, tempDir } from './helpers.js'

t.test('expiresAt is reported for ttlMs and for an absolute expiresAt', async (t) => {
  const dir = tempDir(t, 'ttl')
  let db = await open(dir)
  await db.createNamespace('t')
  const before = Date.now()
  await db.put('t', 'rel', 'v', { ttlMs: 3_600_000 })
  const after = Date.now()
  const abs = Date.now() + 7_200_000
  await db.put('t', 'abs', 'v', { expiresAt: abs })
  await db.put('t', 'plain', 'v')
  for (let round = 0; round < 2; round++) {
    const rel = await db.get('t', 'rel')
    t.ok(rel?.expiresAt !== undefined, 'ttlMs key has expiresAt')
    t.ok(
      rel!.expiresAt! >= before + 3_600_000 && rel!.expiresAt! <= after + 3_600_000,
      'within bounds',
    )
    t.equal((await db.get('t', 'abs'))?.expiresAt, abs, 'absolute expiry kept exactly')
    t.equal((await db.get('t', 'plain'))?.expiresAt, undefined, 'no TTL, no expiresAt')
    await db.close()
    db = await open(dir)
  }
  await db.put('t', 'rel', 'replaced')
  t.equal((await db.get('t', 'rel'))?.expiresAt, undefined, 'a put without TTL clears the TTL')
  t.equal(
    await errorCode(db.put('t', 'both', 'v', { ttlMs: 1000, expiresAt: abs })),
    'INVALID_ARGUMENT',
    'ttlMs and expiresAt together: which one is meant is not for the engine to guess',
  )
  t.equal(await db.get('t', 'both'), undefined)
  await db.close()
})

t.test('an expired key is gone for every operation at once', async (t) => {
  const db = await open(tempDir(t, 'ttl'))
  t.teardown(() => db.close())
  await db.createNamespace('t')
  await db.put('t', 'keep', 1)
  // Long enough that a slow fsync on a busy machine cannot expire them before the first reads.
  await db.put('t', 'short', 'bye', { ttlMs: 500 })
  await db.batch([{ type: 'put', ns: 't', key: 'short-batch', value: 2, ttlMs: 500 }])
  // An expiry already past may be refused or stored as expired; either way it is never read.
  const pastCode = await errorCode(db.put('t', 'past', 'never', { expiresAt: Date.now() - 1000 }))
  t.ok(['RESOLVED', 'INVALID_ARGUMENT'].includes(pastCode), `past expiresAt: ${pastCode}`)
  t.equal((await db.get('t', 'short'))?.value, 'bye', 'readable before expiry')
  t.equal((await db.get('t', 'short-batch'))?.value, 2)
  t.equal(await db.get('t', 'past'), undefined, 'an expiry in the past is expired at once')
  await sleep(600)
  t.equal(await db.get('t', 'short'), undefined, 'get')
  t.equal(await db.get('t', 'short-batch'), undefined, 'get (batch put)')
  t.same((await db.list('t')).keys, ['keep'], 'list')
  t.same((await db.list('t', { reverse: true })).keys, ['keep'], 'reverse list')
  t.same((await db.list('t', { prefix: 'short' })).keys, [], 'prefix list')
  t.equal(db.namespaceStats('t')?.keys, 1, 'namespace key count')
  t.equal(await db.delete('t', 'short'), false, 'delete sees it as missing')
  t.equal(
    (await db.put('t', 'short-batch', 3, { ifVersion: null })).created,
    true,
    'create-only succeeds',
  )
  t.equal(await db.increment('t', 'short', 2), 2, 'increment counts an expired key as 0')
  t.equal((await db.get('t', 'short'))?.expiresAt, undefined, 'the new value has no TTL')
})

t.test('expiry holds across reopen and compaction', async (t) => {
  const dir = tempDir(t, 'ttl')
  let db = await open(dir, { segmentBytes: 4096 })
  await db.createNamespace('t')
  for (let i = 0; i < 50; i++) await db.put('t', `s${i}`, 'x'.repeat(100), { ttlMs: 50 })
  for (let i = 0; i < 50; i++) await db.put('t', `l${i}`, 'y'.repeat(100), { ttlMs: 3_600_000 })
  await sleep(120)
  await db.close()
  db = await open(dir, { segmentBytes: 4096 })
  t.equal(
    (await db.list('t', { prefix: 's' })).keys.length,
    0,
    'expired keys stay expired after reopen',
  )
  t.equal((await db.list('t', { prefix: 'l' })).keys.length, 50)
  await db.compact()
  await db.close()
  db = await open(dir, { segmentBytes: 4096 })
  t.equal((await db.list('t', { prefix: 's' })).keys.length, 0, 'and after compaction')
  t.equal((await db.list('t', { prefix: 'l' })).keys.length, 50)
  t.ok((await db.get('t', 'l7'))?.expiresAt, 'long TTL still reported')
  await db.close()
})

t.test('an expiry is a write: a sweep lets expired keys go, a budget of keys a call', async (t) => {
  const db = await open(tempDir(t, 'ttl'))
  t.teardown(() => db.close())
  await db.createNamespace('s')
  for (let i = 0; i < 100; i++)
    await db.put('s', `k${String(i).padStart(3, '0')}`, i, { ttlMs: 20 })
  await db.put('s', 'stays', 1)
  await new Promise((r) => setTimeout(r, 40))
  // The tombstones are written from setImmediate, then synced: wait for both, however slow
  // the disk, rather than for a fixed time.
  const settle = async () => {
    await new Promise((r) => setImmediate(r))
    await db.flush()
  }
  db.sweepExpired(30)
  await settle()
  t.equal(
    db.namespaceVersion('s'),
    101 + 30,
    'one call: a tombstone each for the 30 keys it looked at',
  )
  for (let i = 0; i < 3; i++) db.sweepExpired(30)
  await settle()
  t.equal(db.namespaceVersion('s'), 201, 'the walk goes on where it stopped, until every one went')
  db.sweepExpired(1000)
  await settle()
  t.equal(db.namespaceVersion('s'), 201, 'nothing is written twice')
  t.same((await db.list('s')).keys, ['stays'])
})

t.test('expiries the disk refuses are written once it works again, for watchers', async (t) => {
  const db = await open(tempDir(t, 'ttl-fault'))
  t.teardown(() => db.close())
  t.teardown(clearFaults)
  await db.createNamespace('s')
  const deleted: string[] = []
  db.onCommit((changes) => {
    for (const c of changes) if (c.type === 'delete') deleted.push(c.key)
  })
  for (let i = 0; i < 3; i++) await db.put('s', `t${i}`, i, { ttlMs: 20 })
  injectFault({ op: 'fsync', code: 'EIO', times: Number.POSITIVE_INFINITY })
  await new Promise((r) => setTimeout(r, 60))
  db.sweepExpired(100)
  await new Promise((r) => setTimeout(r, 300))
  t.same(deleted, [], 'nothing written while the disk refuses')
  t.same((await db.list('s')).keys, [], 'yet the keys are gone for reads')
  clearFaults()
  const end = Date.now() + 15_000
  while (deleted.length < 3 && Date.now() < end) await new Promise((r) => setTimeout(r, 100))
  t.same(deleted.sort(), ['t0', 't1', 't2'], 'each expiry is a delete once the disk works')
})

t.test(
  'keys that expired while the database was shut are written as deletes once open',
  async (t) => {
    // From a checkpoint (a clean close) and from the log alone (a crash): either way each
    // expiry becomes a delete with a version of its own, as a watcher must see it.
    for (const how of ['close', 'crash'] as const) {
      const dir = tempDir(t, `ttl-shut-${how}`)
      const db = await open(dir)
      await db.createNamespace('s')
      for (let i = 0; i < 5; i++) await db.put('s', `e${i}`, i, { ttlMs: 100 })
      await db.put('s', 'stays', 1)
      let from = dir
      if (how === 'close') await db.close()
      else {
        from = tempDir(t, `ttl-shut-${how}-image`)
        crashCopy(dir, from)
        await db.close()
      }
      await sleep(150)
      const again = await open(from)
      t.teardown(() => again.close())
      const deleted: [string, number][] = []
      again.onCommit((changes) => {
        for (const c of changes) if (c.type === 'delete') deleted.push([c.key, c.version])
      })
      t.same((await again.list('s')).keys, ['stays'], `${how}: expired keys are gone for reads`)
      again.sweepExpired(100)
      const end = Date.now() + 10_000
      while (deleted.length < 5 && Date.now() < end) await sleep(50)
      t.same(
        deleted.map(([k]) => k).sort(),
        ['e0', 'e1', 'e2', 'e3', 'e4'],
        `${how}: a delete for each`,
      )
      t.ok(
        deleted.every(([, v]) => v > 6),
        `${how}: each at a version after the writes before the shutdown`,
      )
    }
  },
)
