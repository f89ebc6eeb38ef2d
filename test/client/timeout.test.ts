// Timeouts and cancellation, against a local server that accepts requests and never answers.
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { Cairn, NetworkError, TimeoutError } from '../../client/src/index.js'

async function silentServer(t: { teardown(fn: () => unknown): void }) {
  const srv = http.createServer((req, res) => {
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
  }
}

/**
 * The global fetch, counting the attempts the client makes: a request that times out under
 * load may never reach the server, so attempts are counted where they start. `responses`
 * counts those whose headers arrived.
 */
function countingFetch() {
  const f = Object.assign(
    async (url: string, init: RequestInit) => {
      f.calls++
      const res = await fetch(url, init)
      f.responses++
      return res
    },
    { calls: 0, responses: 0 },
  )
  return f
}

t.test('timeoutMs gives a TimeoutError', async (t) => {
  const s = await silentServer(t)
  const f = countingFetch()
  const kv = new Cairn('k', { baseUrl: s.baseUrl, timeoutMs: 200, retries: false, fetch: f })
  const e = await kv.get('ns', 'k').catch((e) => e)
  t.ok(e instanceof TimeoutError, `${e?.name}: ${e?.message}`)
  t.ok(e instanceof NetworkError, 'a TimeoutError is a NetworkError')
  t.equal(e.code, 'timeout')
  t.equal(e.status, 0)
  t.equal(f.calls, 1, 'one attempt with retries off')

  // Headers arrive, the body never ends: the timeout must cover reading the body too. On a
  // loaded machine even the headers may take longer than the timeout, which would prove
  // nothing, so the timeout grows until they arrive in time.
  let bodyTimedOut = false
  for (const timeoutMs of [200, 1000, 5000]) {
    const g = countingFetch()
    const slow = new Cairn('k', { baseUrl: s.baseUrl, timeoutMs, retries: false, fetch: g })
    const err = await slow.get('ns', 'slow-body').catch((e) => e)
    t.ok(err instanceof TimeoutError, `slow body, ${timeoutMs} ms: ${err?.name}`)
    if (g.responses === 1) {
      bodyTimedOut = true
      break
    }
  }
  t.ok(bodyTimedOut, 'a body that never ends times out after its headers arrived')

  const g = countingFetch()
  const retrying = new Cairn('k', {
    baseUrl: s.baseUrl,
    timeoutMs: 150,
    retries: { limit: 2, baseDelayMs: 5 },
    fetch: g,
  })
  await t.rejects(retrying.list('ns'), TimeoutError)
  t.equal(g.calls, 3, 'a read that timed out is retried')
  g.calls = 0
  await t.rejects(retrying.put('ns', 'k', 1, { ifMatch: '3' }), TimeoutError)
  t.equal(g.calls, 1, 'a conditional write that timed out is not')
})

t.test('an AbortSignal cancels the call and its retry wait', async (t) => {
  const s = await silentServer(t)
  const f = countingFetch()
  const kv = new Cairn('k', { baseUrl: s.baseUrl, timeoutMs: 0, fetch: f })

  const ctl = new AbortController()
  setTimeout(() => ctl.abort(), 100)
  const e = await kv.get('ns', 'k', { signal: ctl.signal }).catch((e) => e)
  t.equal(e?.name, 'AbortError', 'rejects with the signal reason')

  const before = f.calls
  await t.rejects(kv.get('ns', 'k', { signal: AbortSignal.abort() }), { name: 'AbortError' })
  t.equal(f.calls, before, 'an aborted signal sends nothing')

  // The server asks for an hour's wait; the abort comes once the client has started it. Were
  // the wait not cancelled, the call would hang and the test would time out.
  const mine = new Error('stop')
  const ctl2 = new AbortController()
  const delays: number[] = []
  const g = countingFetch()
  const patient = new Cairn('k', {
    baseUrl: s.baseUrl,
    timeoutMs: 0,
    fetch: g,
    retries: { limit: 1, maxRetryAfterMs: 2 * 3600_000 },
    onRetry: (e) => {
      delays.push(e.delayMs)
      setImmediate(() => ctl2.abort(mine))
    },
  })
  const waiting = patient.get('ns', 'busy', { signal: ctl2.signal })
  t.equal(await waiting.catch((e) => e), mine, 'a custom reason is passed through')
  t.equal(delays.length, 1, 'the abort came during the retry wait')
  t.ok(delays[0]! >= 3600_000, `the wait was Retry-After's hour (${delays[0]} ms)`)
  t.equal(g.calls, 1, 'no second attempt')
})
