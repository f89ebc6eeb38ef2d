// The engine's options reach it from `cairn serve`: a small --segment-bytes seals segments
// after that many bytes (files on disk show it), and a bad value is refused before the
// server listens, with the flag named.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { cairn } from '../helpers/cli.js'
import { startServer } from '../helpers/server.js'

t.test('--segment-bytes and --auto-compact reach the engine', async (t) => {
  const srv = await startServer({
    args: ['--segment-bytes', '65536', '--auto-compact', 'off', '--cache-bytes', '0'],
  })
  t.teardown(() => srv.stop())
  const acct = await srv.createAccount()
  const h = { 'x-api-key': acct.apiKey, 'content-type': 'application/json' }
  const made = await fetch(`${srv.baseUrl}/namespaces`, {
    method: 'POST',
    headers: h,
    body: JSON.stringify({ name: 'big' }),
  })
  t.equal(made.status, 201)
  const value = JSON.stringify({ value: 'x'.repeat(8000) })
  for (let i = 0; i < 40; i++) {
    const r = await fetch(`${srv.baseUrl}/big/k${i}`, { method: 'PUT', headers: h, body: value })
    t.equal(r.status, 201, `put ${i}`)
  }
  // 40 values of 8 KB are 320 KB of log: at 64 KiB a segment, at least four are sealed.
  const segments = fs.readdirSync(srv.dataDir).filter((f) => f.endsWith('.seg'))
  t.ok(segments.length >= 5, `the log is cut into 64 KiB segments (${segments.length} files)`)
  const got = await fetch(`${srv.baseUrl}/big/k0`, { headers: h })
  t.equal((await got.json()).value.length, 8000, 'values read back across segments')
})

t.test('the environment sets them too', async (t) => {
  const srv = await startServer({ env: { CAIRN_SEGMENT_BYTES: '65536' } })
  t.teardown(() => srv.stop())
  const acct = await srv.createAccount()
  const h = { 'x-api-key': acct.apiKey, 'content-type': 'application/json' }
  await fetch(`${srv.baseUrl}/namespaces`, {
    method: 'POST',
    headers: h,
    body: JSON.stringify({ name: 'e' }),
  })
  const value = JSON.stringify({ value: 'y'.repeat(8000) })
  for (let i = 0; i < 20; i++)
    await fetch(`${srv.baseUrl}/e/k${i}`, { method: 'PUT', headers: h, body: value })
  const segments = fs.readdirSync(srv.dataDir).filter((f) => f.endsWith('.seg'))
  t.ok(segments.length >= 2, `CAIRN_SEGMENT_BYTES cuts the log (${segments.length} files)`)
})

t.test('bad engine options are refused at start', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-flags-'))
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }))
  for (const [args, says] of [
    [['--segment-bytes', 'lots'], '--segment-bytes must be a whole number'],
    [['--compaction-dead-ratio', '1.5'], '--compaction-dead-ratio must be between 0 and 1'],
    [['--auto-compact', 'maybe'], '--auto-compact takes on or off'],
    [['--sync-interval-ms', '0'], '--sync-interval-ms must be a whole number above 0'],
    [
      ['--store', 'redis://127.0.0.1:1', '--cache-bytes', '0'],
      'the engine options apply to the embedded store',
    ],
  ] as const) {
    const run = await cairn(['serve', '--port', '0', '--data', dir, ...args])
    t.not(run.code, 0, `${args.join(' ')} exits non-zero`)
    t.match(run.stderr + run.stdout, says, `and says: ${says}`)
  }
})
