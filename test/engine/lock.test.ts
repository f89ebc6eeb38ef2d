// One process per directory: a second open fails with LOCKED, a killed holder does not block.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import fs from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { open } from '../../engine/index.js'
import { otherProcess } from '../helpers/other-process.js'
import { errorCode, repoRoot, runChild, sleep, tempDir } from './helpers.js'

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

t.test('processes racing for a stale lock: exactly one gets it', async (t) => {
  // A pid that no longer runs: a child's, once it has exited.
  const gone = runChild(holder, [tempDir(t, 'lock-gone')])
  await gone.waitFor((l) => l === 'ready' || l.startsWith('error'))
  gone.kill('SIGKILL')
  await gone.exited
  const deadPid = String(gone.pid)
  for (let round = 0; round < 6; round++) {
    const dir = tempDir(t, 'lock-race')
    fs.writeFileSync(path.join(dir, 'LOCK'), deadPid)
    const at = Date.now() + 2500
    const racers = Array.from({ length: 3 }, () => runChild(holder, [dir, String(at)]))
    const said = await Promise.all(
      racers.map((c) => c.waitFor((l) => l === 'ready' || l.startsWith('error'))),
    )
    for (const c of racers) c.kill('SIGKILL')
    await Promise.all(racers.map((c) => c.exited))
    t.equal(said.filter((l) => l === 'ready').length, 1, `round ${round}: ${said.join(', ')}`)
    t.same(
      said.filter((l) => l !== 'ready'),
      ['error LOCKED', 'error LOCKED'],
      'the others are told LOCKED',
    )
  }
})

t.test('a killed holder not yet reaped (a zombie) does not hold the directory', async (t) => {
  const dir = tempDir(t, 'lock-zombie')
  // The holder's parent becomes `sleep`, which never reaps it: killed, it stays a zombie.
  const parent = spawn(
    'sh',
    [
      '-c',
      `"$0" --import tsx "$1" "$2" & echo "pid $!"; exec sleep 60`,
      process.execPath,
      holder,
      dir,
    ],
    { cwd: repoRoot, stdio: ['ignore', 'pipe', 'inherit'] },
  )
  t.teardown(() => parent.kill('SIGKILL'))
  let out = ''
  parent.stdout.setEncoding('utf8')
  const said = new Promise<void>((resolve) =>
    parent.stdout.on('data', (chunk: string) => {
      out += chunk
      if (/ready|error/.test(out)) resolve()
    }),
  )
  await said
  t.match(out, /ready/, 'the holder opened the directory')
  const pid = Number(/pid (\d+)/.exec(out)![1])
  process.kill(pid, 'SIGKILL')
  let state = ''
  for (let i = 0; i < 100 && state !== 'Z'; i++) {
    await sleep(20)
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
    state = stat.slice(stat.lastIndexOf(')') + 2)[0]!
  }
  t.equal(state, 'Z', 'the killed holder is a zombie')
  const db = await open(dir)
  t.ok((await db.get('held', 'pid'))?.value, 'opened, with what the killed process wrote')
  await db.close()
})

t.test(
  'a LOCK naming a reused pid is stale: the start time and boot it names decide',
  async (t) => {
    const other = await otherProcess(t)
    if (typeof other === 'string') return void t.skip(other)
    const { pid, start, boot } = other
    const tryLock = async (text: string) => {
      const dir = tempDir(t, 'lock-reused')
      fs.writeFileSync(path.join(dir, 'LOCK'), text)
      try {
        const db = await open(dir)
        const now = fs.readFileSync(path.join(dir, 'LOCK'), 'utf8')
        await db.close()
        return `opened, LOCK ${now.split(' ')[0] === String(process.pid) ? 'ours' : now}`
      } catch (err) {
        return `error ${(err as { code?: string }).code}`
      }
    }
    t.equal(await tryLock(`${pid} ${start} ${boot}`), 'error LOCKED', 'its own start: held')
    t.equal(
      await tryLock(`${pid} ${Number(start) + 1} ${boot}`),
      'opened, LOCK ours',
      'another start',
    )
    t.equal(await tryLock(`${pid} ${start} not-this-boot`), 'opened, LOCK ours', 'another boot')
    t.equal(
      await tryLock(String(pid)),
      'error LOCKED',
      'a pid alone (an older LOCK): held while it runs',
    )
    other.proc.kill('SIGKILL')
    await once(other.proc, 'exit')
    t.equal(await tryLock(`${pid} ${start} ${boot}`), 'opened, LOCK ours', 'its process gone')
  },
)

t.test(
  'a LOCK removed under an open database is made again; one taken over stops writes',
  async (t) => {
    const dir = tempDir(t, 'lock-watch')
    const db = await open(dir)
    t.teardown(() => db.close())
    await db.createNamespace('n')
    const lock = path.join(dir, 'LOCK')
    fs.rmSync(lock)
    await sleep(2500)
    t.equal(fs.readFileSync(lock, 'utf8').split(' ')[0], String(process.pid), 'LOCK is ours again')
    const other = runChild(holder, [dir])
    t.teardown(() => other.kill())
    t.equal(
      await other.waitFor((l) => l === 'ready' || l.startsWith('error')),
      'error LOCKED',
      'so a second process is refused',
    )
    await db.put('n', 'k', 1)

    // Now as if a second process had started while LOCK was gone: it names another process.
    const sleeper = spawn('sleep', ['60'], { stdio: 'ignore' })
    t.teardown(() => sleeper.kill('SIGKILL'))
    await once(sleeper, 'spawn')
    fs.writeFileSync(lock, String(sleeper.pid))
    await sleep(2500)
    t.equal(await errorCode(db.put('n', 'k', 2)), 'IO_ERROR', 'this process no longer writes')
    t.match(db.health(), { state: 'failed', reason: /another process took this directory/ })
    t.equal((await db.get('n', 'k'))?.value, 1, 'reads go on')
  },
)
