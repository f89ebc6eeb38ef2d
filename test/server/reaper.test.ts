// A test process killed outright (a timeout's SIGKILL runs no teardown) takes the servers it
// started with it (helpers/reaper.ts): nothing is left running after the suite.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { root } from '../helpers/server.js'

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

t.test('a server outlives no SIGKILLed test', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-reaper-'))
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }))
  const script = path.join(dir, 'starts-a-server.mts')
  fs.writeFileSync(
    script,
    `import { startServer } from ${JSON.stringify(path.join(root, 'test/helpers/server.ts'))}
const srv = await startServer()
console.log('server pid ' + srv.proc!.pid)
setInterval(() => {}, 1000)
`,
  )
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  let out = ''
  child.stdout!.setEncoding('utf8')
  const pid = await new Promise<number>((resolve, reject) => {
    child.stdout!.on('data', (d: string) => {
      out += d
      const m = /server pid (\d+)/.exec(out)
      if (m) resolve(Number(m[1]))
    })
    child.once('exit', () => reject(new Error(`the test process ended first: ${out}`)))
  })
  t.ok(alive(pid), 'the server runs while its test does')
  child.kill('SIGKILL')
  await once(child, 'exit')
  let waited = 0
  while (alive(pid) && waited < 20_000) {
    await new Promise((r) => setTimeout(r, 200))
    waited += 200
  }
  t.notOk(alive(pid), 'and is gone soon after the test process is killed')
  if (alive(pid)) process.kill(pid, 'SIGKILL')
})
