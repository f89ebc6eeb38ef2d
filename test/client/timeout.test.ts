// Timeouts and cancellation, against a local server that accepts requests and never answers.
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { Cairn, NetworkError, TimeoutError } from '../../client/src/index.js'

async function silentServer(t: { teardown(fn: () => unknown): void }) {
  let requests = 0
  const srv = http.createServer((req, res) => {
    requests++
    if (req.url?.includes('slow-body')) {
      // Headers now, body never: the timeout must cover reading the body too.
      res.writeHead(200, { 'content-type': 'application/json' })
      res.write('{"value":')
    }
    if (req.url?.includes('busy')) {
      res.writeHead(503, { 'retry-after': '3600' })
      res.end()
    }
  })
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r))
  t.teardown(
    () =>
      new Promise<void>((r) => {
        srv.closeAllConnections()
        srv.close(() => r())
      }),
  )
  return {
    baseUrl: `http://127.0.0.1:${(srv.address() as AddressInfo).port}/v1`,
    count: () => requests,
  }
}

t.test('timeoutMs gives a TimeoutError', async (t) => {
  const s = await silentServer(t)
  const kv = new Cairn('k', { baseUrl: s.baseUrl, timeoutMs: 200, retries: false })
  const e = await kv.get('ns', 'k').catch((e) => e)
  t.ok(e instanceof TimeoutError, `${e?.name}: ${e?.message}`)
  t.ok(e instanceof NetworkError, 'a TimeoutError is a NetworkError')
  t.equal(e.code, 'timeout')
  t.equal(e.status, 0)
  t.equal(s.count(), 1)

  await t.rejects(kv.get('ns', 'slow-body'), TimeoutError, 'a body that never ends times out too')

  const retrying = new Cairn('k', {
    baseUrl: s.baseUrl,
    timeoutMs: 150,
    retries: { limit: 2, baseDelayMs: 5 },
  })
  const before = s.count()
  await t.rejects(retrying.list('ns'), TimeoutError)
  t.equal(s.count() - before, 3, 'a read that timed out is retried')
  const before2 = s.count()
  await t.rejects(retrying.put('ns', 'k', 1, { ifMatch: '3' }), TimeoutError)
  t.equal(s.count() - before2, 1, 'a conditional write that timed out is not')
})

t.test('an AbortSignal cancels the call and its retry wait', async (t) => {
  const s = await silentServer(t)
  const kv = new Cairn('k', { baseUrl: s.baseUrl, timeoutMs: 0 })

  const ctl = new AbortController()
  setTimeout(() => ctl.abort(), 100)
  const e = await kv.get('ns', 'k', { signal: ctl.signal }).catch((e) => e)
  t.equal(e?.name, 'AbortError', 'rejects with the signal reason')

  const before = s.count()
  await t.rejects(kv.get('ns', 'k', { signal: AbortSignal.abort() }), { name: 'AbortError' })
  t.equal(s.count(), before, 'an aborted signal sends nothing')

  // The server asks for an hour's wait; the abort comes once the client has started it. Were
  // the wait not cancelled, the call would hang and the test would time out.
  const mine = new Error('stop')
  const ctl2 = new AbortController()
  const delays: number[] = []
  const patient = new Cairn('k', {
    baseUrl: s.baseUrl,
    timeoutMs: 0,
    retries: { limit: 1, maxRetryAfterMs: 2 * 3600_000 },
    onRetry: (e) => {
      delays.push(e.delayMs)
      setImmediate(() => ctl2.abort(mine))
    },
  })
  const before2 = s.count()
  const waiting = patient.get('ns', 'busy', { signal: ctl2.signal })
  t.equal(await waiting.catch((e) => e), mine, 'a custom reason is passed through')
  t.equal(delays.length, 1, 'the abort came during the retry wait')
  t.ok(delays[0]! >= 3600_000, `the wait was Retry-After's hour (${delays[0]} ms)`)
  t.equal(s.count() - before2, 1, 'no second attempt')
})
