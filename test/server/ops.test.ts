// Operations: health and readiness, Prometheus metrics, JSON logs carrying the request id
// and no secrets, and a graceful stop that finishes requests in flight.
import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import t from 'tap'
import { startServer } from '../helpers/server.js'
import { Client, sleep } from './contract/http.js'

t.test('healthz, readyz and metrics', async (t) => {
  const srv = await startServer()
  t.teardown(() => srv.stop())
  const acct = await srv.createAccount()
  const api = new Client(srv.baseUrl, acct.apiKey)
  await api.createNamespace('m')
  await api.mustPut('m', 'k', 1)
  for (let i = 0; i < 3; i++) await api.get('/m/k')
  await api.get('/m/missing')

  const health = await fetch(`${srv.url}/healthz`)
  t.equal(health.status, 200)
  t.same(await health.json(), { status: 'ok' })
  const ready = await fetch(`${srv.url}/readyz`)
  t.equal(ready.status, 200)

  const res = await fetch(`${srv.url}/metrics`)
  t.equal(res.status, 200)
  t.match(res.headers.get('content-type'), /^text\/plain/)
  const text = await res.text()
  const value = (re: RegExp) => Number(re.exec(text)?.[1] ?? Number.NaN)
  t.equal(
    value(/^cairn_http_requests_total\{route="get_value",status="200"\} (\d+)$/m),
    3,
    'GETs by route and status',
  )
  t.equal(value(/^cairn_http_requests_total\{route="get_value",status="404"\} (\d+)$/m), 1)
  t.equal(
    value(/^cairn_http_request_duration_seconds_count\{route="get_value"\} (\d+)$/m),
    4,
    'latency histogram',
  )
  t.match(text, /^cairn_http_request_duration_seconds_bucket\{route="put_value",le="\+Inf"\} 1$/m)
  t.ok(value(/^cairn_engine_keys (\d+)/m) >= 1, 'engine keys')
  for (const name of [
    'cairn_engine_disk_bytes',
    'cairn_engine_dead_bytes',
    'cairn_engine_compactions_total',
    'cairn_engine_fsync_seconds_total',
    'cairn_process_resident_memory_bytes',
  ]) {
    t.match(text, new RegExp(`^${name} `, 'm'), name)
  }
  for (const q of ['0.5', '0.99', '0.999', '1'])
    t.ok(
      value(new RegExp(`^cairn_event_loop_delay_seconds\\{quantile="${q}"\\} ([\\d.e-]+)$`, 'm')) >=
        0,
      `event loop delay, quantile ${q}`,
    )
})

t.test('logs are JSON lines with the request id, and never hold a secret', async (t) => {
  const srv = await startServer({ args: ['--log-level', 'debug'] })
  t.teardown(() => srv.stop())
  const acct = await srv.createAccount(undefined, { password: 'correct horse battery' })
  const api = new Client(srv.baseUrl, acct.apiKey)
  await api.createNamespace('l')
  const res = await api.get('/l/nothing', { headers: { 'x-request-id': 'trace-ops-1' } })
  t.equal(res.headers['x-request-id'], 'trace-ops-1')
  await api.get('/l/x', { key: `${acct.apiKey.slice(0, -1)}Z` })
  await fetch(`${srv.url}/login`)
  await sleep(200)
  const lines = srv.lines.filter(Boolean)
  t.ok(lines.length > 3)
  for (const line of lines)
    t.doesNotThrow(() => JSON.parse(line), `a JSON line: ${line.slice(0, 80)}`)
  t.ok(
    lines.some((l) => JSON.parse(l).reqId === 'trace-ops-1'),
    'the request id is in the log',
  )
  t.ok(
    lines.some((l) => l.includes('"reqId":"trace-ops-1"') && l.includes('"route":"get_value"')),
    'a /v1 request is logged with its route by name',
  )
  t.ok(
    lines.some((l) => l.includes('"route":"dashboard"') && l.includes('"path":"/login"')),
    'a dashboard request is logged too',
  )
  const all = lines.join('\n') + srv.stderr
  const token = fs.readFileSync(path.join(srv.dataDir, 'operator.token'), 'utf8').trim()
  t.notMatch(all, acct.apiKey.slice(6), 'no API key in the log')
  t.notMatch(all, token, 'no operator token in the log')
  t.notMatch(all, 'correct horse', 'no password in the log')
  t.notMatch(all, /"stack"/, 'no stack traces')
})

t.test('SIGTERM finishes requests in flight, then stops; the data is kept', async (t) => {
  const srv = await startServer()
  t.teardown(() => srv.stop())
  const acct = await srv.createAccount()
  const api = new Client(srv.baseUrl, acct.apiKey)
  await api.createNamespace('g')
  const body = '{"value":"finished after SIGTERM"}'
  const s = net.connect(srv.port, '127.0.0.1')
  await new Promise((r) => s.on('connect', r))
  let got = ''
  s.on('data', (d) => {
    got += d.toString()
  })
  s.write(
    `PUT /v1/g/late HTTP/1.1\r\nHost: x\r\nx-api-key: ${acct.apiKey}\r\ncontent-length: ${body.length}\r\n\r\n${body.slice(0, 10)}`,
  )
  // A second client with a connection already open, idle when the stop begins.
  const idle = net.connect(srv.port, '127.0.0.1')
  await new Promise((r) => idle.on('connect', r))
  let idleGot = ''
  idle.on('data', (d) => {
    idleGot += d.toString()
  })
  await sleep(200)
  const exited = srv.terminate()
  await sleep(300)
  idle.write(`GET /v1/g/late HTTP/1.1\r\nHost: x\r\nx-api-key: ${acct.apiKey}\r\n\r\n`)
  await sleep(300)
  t.match(idleGot, /^HTTP\/1\.1 503/, 'a new request while stopping gets 503')
  t.match(idleGot, /"code":"unavailable"/)
  t.match(idleGot, /Retry-After: \d+/i)
  const refused = await new Promise<boolean>((resolve) => {
    const c = net.connect(srv.port, '127.0.0.1')
    c.on('connect', () => {
      c.destroy()
      resolve(false)
    })
    c.on('error', () => resolve(true))
  })
  t.ok(refused, 'no new connections once stopping')
  s.write(body.slice(10))
  const exit = await exited
  t.match(got, /^HTTP\/1\.1 201/, 'the request in flight was answered')
  t.equal(exit.code, 0, 'exit code 0')
  t.ok(
    srv.lines.some((l) => l.includes('"stopped"')),
    'it logs that it stopped',
  )
  await srv.start()
  t.equal(
    (await new Client(srv.baseUrl, acct.apiKey).get('/g/late')).text,
    `{"value":"finished after SIGTERM"}`,
  )
})
