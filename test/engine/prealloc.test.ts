// The active segment is zero-filled ahead of the log (engine/prealloc.ts) and cut back at its
// seal. These tests take the directory as a crash or a power failure would leave it: copied
// while open (zeros past the data), with a sealed segment never cut back, and with a sector
// of the unsynced tail still zeros while records after it reached the disk.
import fs from 'node:fs'
import path from 'node:path'
import t, { type Test } from 'tap'
import { open, repair } from '../../engine/index.js'
import { clearFaults, injectFault } from '../../engine/io.js'
import { crashCopy, errorCode, segmentFiles, sleep, tempDir } from './helpers.js'

/** Where a file's trailing zeros begin. */
function dataEnd(file: string): number {
  const b = fs.readFileSync(file)
  let e = b.length
  while (e > 0 && b[e - 1] === 0) e--
  return e
}

const bigValue = (i: number) => `${i}:${'v'.repeat(600)}`

async function filled(t: Test, keys: number, options = {}) {
  const dir = tempDir(t, 'prealloc')
  const db = await open(dir, options)
  await db.createNamespace('n')
  for (let i = 0; i < keys; i++) await db.put('n', `k${String(i).padStart(5, '0')}`, bigValue(i))
  const active = segmentFiles(dir).at(-1)!
  for (let i = 0; i < 200 && fs.statSync(active).size <= dataEnd(active); i++) await sleep(10)
  return { dir, db, active }
}

/** A closed database of 300 keys in several sealed 64 KiB segments. */
async function sealedSegments(t: Test): Promise<string> {
  const dir = tempDir(t, 'prealloc')
  const db = await open(dir, { segmentBytes: 64 * 1024 })
  await db.createNamespace('n')
  for (let i = 0; i < 300; i++) await db.put('n', `k${i}`, bigValue(i))
  await db.close()
  return dir
}

t.test('the active segment is zero-filled ahead while open and cut back at close', async (t) => {
  const { dir, db, active } = await filled(t, 300)
  const end = dataEnd(active)
  t.ok(fs.statSync(active).size >= end + 1024 * 1024, 'at least 1 MiB of zeros past the data')
  await db.close()
  t.equal(fs.statSync(active).size, end, 'the seal cut the zeros off')
  const again = await open(dir)
  t.equal((await again.list('n', { limit: 1000 })).keys.length, 300)
  t.equal((await again.get('n', 'k00299'))?.value, bigValue(299))
  await again.close()
})

t.test('a crash leaves zeros past the data: open ends the log where they begin', async (t) => {
  const { dir, db } = await filled(t, 300)
  const copy = tempDir(t, 'crashed')
  crashCopy(dir, copy)
  await db.close()
  const back = await open(copy)
  t.teardown(() => back.close())
  t.equal((await back.list('n', { limit: 1000 })).keys.length, 300, 'every acknowledged write')
  t.equal((await back.get('n', 'k00299'))?.value, bigValue(299))
  await back.put('n', 'after', 1)
  t.equal((await back.get('n', 'after'))?.value, 1, 'and writes go on')
})

t.test('a sealed segment a crash kept from being cut back, not in the manifest', async (t) => {
  const dir = await sealedSegments(t)
  const [first] = segmentFiles(dir)
  t.ok(segmentFiles(dir).length >= 2, 'several segments')
  // As if sealed just before the crash: zeros still past its end, no manifest entry yet.
  fs.appendFileSync(first!, Buffer.alloc(100 * 1024))
  fs.rmSync(path.join(dir, 'MANIFEST'))
  fs.rmSync(path.join(dir, 'CHECKPOINT'), { force: true })
  const db = await open(dir)
  t.teardown(() => db.close())
  t.equal((await db.list('n', { limit: 1000 })).keys.length, 300, 'every write is back')
  t.equal(fs.statSync(first!).size, dataEnd(first!), 'the zeros were cut off')
})

t.test(
  'a power failure that left a sector of the unsynced tail as zeros: CORRUPT, and repair keeps the rest',
  async (t) => {
    // After a power failure the pages of an unsynced write over zeros reach the disk in any
    // order. A zeroed sector with intact records after it cannot be told from damage to a
    // record that held zeros, so open does not guess: it names the damage.
    for (const damage of ['zeros', 'garbage'] as const) {
      const { dir, db, active } = await filled(t, 200)
      const copy = tempDir(t, damage)
      crashCopy(dir, copy)
      await db.close()
      const file = path.join(copy, path.basename(active))
      const end = dataEnd(file)
      // A sector well inside the last records (each over 600 bytes), with whole records after.
      const at = Math.floor((end - 3000) / 512) * 512
      const b = fs.readFileSync(file)
      b.fill(damage === 'zeros' ? 0 : 0xab, at, at + 512)
      fs.writeFileSync(file, b)
      t.equal(await errorCode(open(copy)), 'CORRUPT', `${damage}: open names the damage`)
      const report = await repair(copy)
      t.ok(report.dropped.length > 0, `${damage}: repair reports what it left out`)
      const back = await open(copy)
      const keys = (await back.list('n', { limit: 1000 })).keys
      t.ok(keys.length >= 197 && keys.length < 200, `${damage}: repair kept ${keys.length} of 200`)
      for (const k of keys)
        if ((await back.get('n', k))?.value !== bigValue(Number(k.slice(1)))) t.fail(k)
      await back.close()
    }
  },
)

t.test('a fill that fails fails no write', async (t) => {
  injectFault({ op: 'prealloc', code: 'EIO', times: Number.POSITIVE_INFINITY })
  t.teardown(clearFaults)
  const dir = tempDir(t, 'prealloc')
  let db = await open(dir)
  await db.createNamespace('n')
  for (let i = 0; i < 300; i++) await db.put('n', `k${i}`, bigValue(i))
  t.equal(db.health().state, 'ok', 'health stays ok')
  const active = segmentFiles(dir).at(-1)!
  t.equal(fs.statSync(active).size, dataEnd(active), 'nothing was filled')
  await db.close()
  clearFaults()
  db = await open(dir)
  t.teardown(() => db.close())
  t.equal((await db.list('n', { limit: 1000 })).keys.length, 300)
})

t.test('repair cuts zeros past a sealed end without calling them damage', async (t) => {
  const dir = await sealedSegments(t)
  const [first] = segmentFiles(dir)
  const size = fs.statSync(first!).size
  // As if the crash came after the manifest named it, before the zeros were cut off.
  fs.appendFileSync(first!, Buffer.alloc(100 * 1024))
  const report = await repair(dir)
  t.same(report.dropped, [], 'nothing reported')
  t.equal(fs.statSync(first!).size, size, 'cut back to its sealed size')
  const again = await open(dir)
  t.teardown(() => again.close())
  t.equal((await again.list('n', { limit: 1000 })).keys.length, 300)
})
