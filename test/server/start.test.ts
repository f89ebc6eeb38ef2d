// The README's quick start: `npm start` runs the built server with defaults that CAIRN_PORT
// and CAIRN_DATA override (the script passes no flags, since flags win over the environment).
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { root } from '../helpers/server.js'

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port
      s.close(() => resolve(port))
    })
  })
}

t.test('npm start honours CAIRN_PORT and CAIRN_DATA', async (t) => {
  if (!fs.existsSync(path.join(root, 'dist/server/cli/index.js')))
    return t.skip('dist/ is not built (npm install builds it)')
  const port = await freePort()
  const data = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-start-'))
  t.teardown(() => fs.rmSync(data, { recursive: true, force: true }))
  const child = spawn('npm', ['start', '--silent'], {
    cwd: root,
    env: { ...process.env, CAIRN_PORT: String(port), CAIRN_DATA: data, CAIRN_HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  })
  const stop = () => {
    try {
      process.kill(-child.pid!, 'SIGTERM')
    } catch {}
  }
  t.teardown(stop)
  const exited = new Promise((r) => child.on('exit', r))
  const listening = await new Promise<{ port: number; dataDir: string } | string>((resolve) => {
    let out = ''
    const timer = setTimeout(() => resolve(`no "listening" in 30 s: ${out}`), 30_000)
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString()
      for (const line of out.split('\n')) {
        try {
          const msg = JSON.parse(line)
          if (msg.msg === 'listening') {
            clearTimeout(timer)
            resolve(msg)
          }
        } catch {}
      }
    })
    child.stderr!.on('data', (d: Buffer) => {
      out += d.toString()
    })
  })
  if (typeof listening === 'string') return t.fail(listening)
  t.equal(listening.port, port, 'it listens on CAIRN_PORT')
  t.equal(listening.dataDir, data, 'and keeps its data in CAIRN_DATA')
  const res = await fetch(`http://127.0.0.1:${port}/healthz`)
  t.equal(res.status, 200)
  t.ok(fs.existsSync(path.join(data, 'server.json')), 'server.json is in CAIRN_DATA')
  stop()
  await exited
  // npm exits before the server it started has closed its store, which still writes in
  // CAIRN_DATA as it closes: removing the folder waits for the whole process group.
  const until = Date.now() + 15_000
  while (Date.now() < until && groupAlive(child.pid!)) await new Promise((r) => setTimeout(r, 50))
  t.notOk(groupAlive(child.pid!), 'the server exits on SIGTERM')
})

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0)
    return true
  } catch {
    return false
  }
}
