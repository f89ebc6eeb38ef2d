// One process per directory: a second open fails with LOCKED, a killed holder does not block.
import path from 'node:path'
import t from 'tap'
import { open } from '../../engine/index.js'
import { errorCode, repoRoot, runChild, tempDir } from './helpers.js'

const holder = path.join(repoRoot, 'test/engine/child/holder.ts')

t.test('a second open in the same process rejects LOCKED until the first closes', async (t) => {
  const dir = tempDir(t, 'lock')
  const db = await open(dir)
  await db.createNamespace('n')
  await db.put('n', 'k', 1)
  const err = await errorCode(open(dir))
  t.equal(err, 'LOCKED')
  t.equal((await db.get('n', 'k'))?.value, 1, 'the first handle keeps working')
  await db.put('n', 'k', 2)
  await db.close()
  const again = await open(dir)
  t.equal((await again.get('n', 'k'))?.value, 2)
  await again.close()
})

t.test('another process holding the directory blocks open; killing it frees it', async (t) => {
  const dir = tempDir(t, 'lock')
  const child = runChild(holder, [dir])
  t.teardown(() => child.kill())
  t.equal(await child.waitFor((l) => l === 'ready' || l.startsWith('error')), 'ready')
  t.equal(await errorCode(open(dir)), 'LOCKED', 'open while another process holds it')
  child.kill('SIGKILL')
  await child.exited
  const db = await open(dir)
  t.ok((await db.get('held', 'pid'))?.value, "the killed process's acknowledged write is there")
  const other = runChild(holder, [dir])
  t.teardown(() => other.kill())
  t.equal(
    await other.waitFor((l) => l === 'ready' || l.startsWith('error')),
    'error LOCKED',
    'child sees LOCKED',
  )
  await other.exited
  await db.close()
})
