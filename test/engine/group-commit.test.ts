// Durable writes that arrive together share fsyncs (a behavioural check, not a timing one).
import t from 'tap'
import { open } from '../../engine/index.js'
import { tempDir } from './helpers.js'

t.test('64 concurrent durable puts resolve with fewer fsyncs than writes', async (t) => {
  const dir = tempDir(t, 'group')
  let db = await open(dir, { durability: 'always' })
  await db.createNamespace('g')
  const before = db.stats()
  const results = await Promise.all(
    Array.from({ length: 64 }, (_, i) => db.put('g', `k${i}`, { i })),
  )
  const after = db.stats()
  t.equal(results.length, 64, 'all 64 resolved')
  t.equal(new Set(results.map((r) => r.version)).size, 64, 'each write has its own version')
  const writes = after.writes - before.writes
  const fsyncs = after.fsyncs - before.fsyncs
  t.ok(writes >= 64, `writes counted (${writes})`)
  t.ok(fsyncs >= 1, `durable writes were synced (${fsyncs} fsyncs)`)
  t.ok(fsyncs < writes, `fsyncs ${fsyncs} < writes ${writes}: commits were grouped`)
  await db.close()
  db = await open(dir)
  for (let i = 0; i < 64; i++) t.same((await db.get('g', `k${i}`))?.value, { i })
  await db.close()
})

t.test('a lone durable put is synced before it resolves', async (t) => {
  const db = await open(tempDir(t, 'group'), { durability: 'always' })
  t.teardown(() => db.close())
  await db.createNamespace('g')
  for (let i = 0; i < 5; i++) {
    const before = db.stats().fsyncs
    await db.put('g', 'solo', i)
    t.ok(db.stats().fsyncs > before, `put ${i} resolved after an fsync`)
  }
})
