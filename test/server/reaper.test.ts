// A test process killed outright (a timeout's SIGKILL runs no teardown) takes the servers and
// the other children it started with it (helpers/reaper.ts), and a test that times out inside
// tap ends its children in its teardown: nothing is left running after the suite.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import t, { type Test } from 'tap'
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

/** Runs `body` as a test file of its own; resolves with the pid it prints and the process. */
async function testFile(t: Test, body: string) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-reaper-'))
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }))
  const script = path.join(dir, 'starts-a-child.mts')
  fs.writeFileSync(script, body)
  const proc = spawn(process.execPath, ['--import', 'tsx', script], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  t.teardown(() => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL')
  })
  let out = ''
  proc.stdout!.setEncoding('utf8')
  const pid = await new Promise<number>((resolve, reject) => {
    proc.stdout!.on('data', (d: string) => {
      out += d
      const m = /child pid (\d+)/.exec(out)
      if (m) resolve(Number(m[1]))
    })
    proc.once('exit', () => reject(new Error(`the test process ended first: ${out}`)))
  })
  return { proc, pid, out: () => out }
}

async function goneSoon(pid: number): Promise<boolean> {
  for (let waited = 0; alive(pid) && waited < 20_000; waited += 200)
    await new Promise((r) => setTimeout(r, 200))
  if (!alive(pid)) return true
  process.kill(pid, 'SIGKILL')
  return false
}

// The scripts lie outside the checkout, where 'tap' alone would not resolve.
const tap = JSON.stringify(import.meta.resolve('tap'))
const helper = JSON.stringify(path.join(root, 'test/helpers/reaper.ts'))
const kvBin = JSON.stringify(path.join(root, 'client/bin/cairn-kv.mjs'))
// A watch on a server that is not there retries for ever: the child cairn-kv.test.ts left
// running when its server went away.
const startWatch = `const child = endsWithTest(t, spawn(process.execPath, [${kvBin}, 'watch', 'ns'], {
  env: { ...process.env, CAIRN_URL: 'http://127.0.0.1:1/v1', CAIRN_KEY: 'cairn_x' },
  stdio: 'ignore',
}))
console.log('child pid ' + child.pid)`

t.test('a cairn-kv watch outlives no SIGKILLed test', async (t) => {
  const { proc, pid } = await testFile(
    t,
    `import { spawn } from 'node:child_process'
import t from ${tap}
import { endsWithTest } from ${helper}
${startWatch}
setInterval(() => {}, 1000)
`,
  )
  t.ok(alive(pid), 'the watch runs while its test does')
  proc.kill('SIGKILL')
  await once(proc, 'exit')
  t.ok(await goneSoon(pid), 'and is gone soon after the test process is killed')
})

t.test('a cairn-kv watch ends with a test that times out', async (t) => {
  const { proc, pid, out } = await testFile(
    t,
    `import { spawn } from 'node:child_process'
import t from ${tap}
import { endsWithTest } from ${helper}
t.test('hangs', { timeout: 1000 }, async (t) => {
  ${startWatch.replaceAll('\n', '\n  ')}
  await new Promise(() => {})
})
t.teardown(() => console.log('file ends'))
setTimeout(() => {}, 60_000)
`,
  )
  t.ok(alive(pid), 'the watch runs while its test does')
  t.ok(await goneSoon(pid), 'and is gone once its test times out')
  t.ok(alive(proc.pid!), 'while the test process goes on', { out: out() })
})
