// A compaction pass and a seal that is retried while the pass waits for its manifest write:
// the pass must not choose a segment whose seal is unfinished, or the retried seal names in
// the manifest a segment the pass then deletes, and the next open finds it missing.
import fs from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { open } from '../../engine/index.js'
import { clearFaults, injectFault, io } from '../../engine/io.js'
import { errorCode, sleep, tempDir } from './helpers.js'

t.test('a seal retried during a pass names no segment the pass removes', async (t) => {
  const dir = tempDir(t, 'seal-race')
  t.teardown(clearFaults)
  const db = await open(dir, { segmentBytes: 8 * 1024, autoCompact: false })
  await db.createNamespace('n')
  // seg-1's hint cannot be written (later seals try again, and fail too): it stays sealed
  // with its hint still to write.
  injectFault({
    op: 'open',
    code: 'EIO',
    path: /seg-00000001\.hint\.tmp$/,
    times: Number.POSITIVE_INFINITY,
  })
  for (let i = 0; i < 40; i++) await db.put('n', `k${i}`, 'v'.repeat(500))
  await db.log.sealsSettled()
  const manifest = () => fs.readFileSync(path.join(dir, 'MANIFEST'), 'utf8')
  t.notOk(/"id":1,/.test(manifest()), 'seg-1 is not in the manifest yet')
  // A slow disk: each manifest write takes 600 ms.
  const write = io.writeFileAtomic
  io.writeFileAtomic = async (file: string, bytes: Uint8Array) => {
    if (file.endsWith('MANIFEST')) await sleep(600)
    return write(file, bytes)
  }
  t.teardown(() => {
    io.writeFileAtomic = write
  })
  const pass = db.compact()
  // While the pass waits, a write fails; the retry 200 ms later seals what is unsealed.
  await sleep(700)
  clearFaults()
  injectFault({ op: 'write', code: 'EIO', path: /\.seg$/, times: 1 })
  t.equal(await errorCode(db.put('n', 'x', 'y')), 'IO_ERROR')
  await pass
  await sleep(1200)
  await db.log.sealsSettled()
  await db.close()
  io.writeFileAtomic = write
  const listed = JSON.parse(manifest().slice(manifest().indexOf('\n') + 1)).sealed as {
    id: number
  }[]
  for (const s of listed)
    t.ok(
      fs.existsSync(path.join(dir, `seg-${String(s.id).padStart(8, '0')}.seg`)),
      `seg ${s.id} is there`,
    )
  const again = await open(dir)
  t.equal((await again.list('n', { limit: 100 })).keys.length, 40, 'every acknowledged write')
  await again.close()
})

t.test('a seal whose hint could not be written is done again by the next seal', async (t) => {
  const dir = tempDir(t, 'seal-again')
  t.teardown(clearFaults)
  const db = await open(dir, { segmentBytes: 8 * 1024, autoCompact: false })
  await db.createNamespace('n')
  injectFault({ op: 'open', code: 'EIO', path: /seg-00000001\.hint\.tmp$/, times: 1 })
  for (let i = 0; i < 40; i++) await db.put('n', `k${i}`, 'v'.repeat(500))
  await db.log.sealsSettled()
  const manifest = JSON.parse(
    fs.readFileSync(path.join(dir, 'MANIFEST'), 'utf8').split('\n').slice(1).join('\n'),
  ) as { sealed: { id: number }[] }
  t.ok(
    manifest.sealed.some((s) => s.id === 1),
    'seg-1 is in the manifest, sealed by a later seal',
  )
  t.ok(fs.existsSync(path.join(dir, 'seg-00000001.hint')), 'with its hint')
  await db.close()
})
