// A backup taken while writes continue opens as a consistent copy of the database.
import fs from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { open } from '../../engine/index.js'
import { tempDir } from './helpers.js'

t.test('backup while writing, then open the copy', async (t) => {
  const dir = tempDir(t, 'backup-src')
  const target = path.join(tempDir(t, 'backup-dst'), 'copy')
  const db = await open(dir, { segmentBytes: 32 * 1024 })
  await db.createNamespace('fixed')
  await db.createNamespace('live')
  const fixed = new Map<string, unknown>()
  for (let i = 0; i < 2000; i++) {
    const value = i % 3 === 0 ? Buffer.from(`bytes-${i}`) : { i, s: 'v'.repeat(i % 50) }
    fixed.set(`k${i}`, value)
  }
  await Promise.all([...fixed].map(([k, v]) => db.put('fixed', k, v)))
  for (let i = 0; i < 2000; i += 7) {
    await db.delete('fixed', `k${i}`)
    fixed.delete(`k${i}`)
  }

  // One sequential writer: the copy must hold a prefix of its writes, with no gap.
  let stop = false
  let acked = 0
  const writer = (async () => {
    for (let i = 0; !stop; i++) {
      await db.put('live', `w${String(i).padStart(6, '0')}`, i)
      acked = i + 1
    }
  })()
  while (acked < 50) await new Promise((r) => setTimeout(r, 5))
  const ackedBefore = acked
  await db.backup(target)
  const ackedAfter = acked
  stop = true
  await writer
  t.ok(fs.existsSync(target), 'backup directory exists')

  const copy = await open(target)
  t.teardown(() => copy.close())
  t.teardown(() => db.close())
  const copyKeys = (await copy.list('fixed', { limit: 5000 })).keys
  t.equal(copyKeys.length, fixed.size, 'every fixed key and no deleted one')
  let mismatches = 0
  for (const [k, v] of fixed) {
    const got = (await copy.get('fixed', k))?.value
    const same = Buffer.isBuffer(v)
      ? Buffer.isBuffer(got) && got.equals(v)
      : JSON.stringify(got) === JSON.stringify(v)
    if (!same) mismatches++
  }
  t.equal(mismatches, 0, 'fixed values identical in the copy')
  const live = (await copy.list('live', { limit: 1_000_000 })).keys
  t.ok(
    live.length >= ackedBefore,
    `copy holds the ${ackedBefore} writes acknowledged before backup() (has ${live.length})`,
  )
  t.ok(live.length <= ackedAfter + 1, 'and nothing written after backup() resolved')
  const expected = live.map((_, i) => `w${String(i).padStart(6, '0')}`)
  t.same(live, expected, 'the copy is a prefix of the writes: no gaps')
  await copy.put('fixed', 'only-in-copy', 1)
  t.equal(await db.get('fixed', 'only-in-copy'), undefined, 'the copy is independent of the source')
})
