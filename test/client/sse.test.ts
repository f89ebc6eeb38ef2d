// The watch's machinery without the real server: the SSE parser against the standard's rules
// (every chunk split), and watch() against a scripted HTTP server on a real port that drops
// connections, repeats events, closes slow consumers and refuses, so resuming, back-off and
// stopping are checked exactly. test/client/watch.test.ts runs the same against the server.
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import {
  Cairn,
  HistoryExpiredError,
  InvalidResponseError,
  NetworkError,
  type ReconnectEvent,
  TimeoutError,
  TooSlowError,
  type WatchEvent,
  WatchLimitError,
} from '../../client/src/index.js'
import { SseParser } from '../../client/src/sse.js'

/** Parses `text` fed whole, then in every two-piece split, then a character at a time; all must agree. */
function parseAll(text: string) {
  const whole = new SseParser().push(text)
  for (let cut = 0; cut <= text.length; cut++) {
    const p = new SseParser()
    const got = [...p.push(text.slice(0, cut)), ...p.push(text.slice(cut))]
    if (JSON.stringify(got) !== JSON.stringify(whole)) {
      throw new Error(`split at ${cut} gives ${JSON.stringify(got)}, not ${JSON.stringify(whole)}`)
    }
  }
  const p = new SseParser()
  const chars = [...text].flatMap((c) => p.push(c))
  if (JSON.stringify(chars) !== JSON.stringify(whole)) throw new Error('char by char differs')
  return whole
}

t.test('SSE parsing follows the standard', async (t) => {
  t.same(
    parseAll('event: put\ndata: {"a":1}\nid: 7\n\n'),
    [{ event: 'put', data: '{"a":1}', id: '7' }],
    'LF',
  )
  t.same(
    parseAll('event: put\r\ndata: x\r\n\r\nevent: delete\rdata: y\r\r'),
    [
      { event: 'put', data: 'x', id: '' },
      { event: 'delete', data: 'y', id: '' },
    ],
    'CRLF and CR, split anywhere (a CRLF across chunks is one line end)',
  )
  t.same(
    parseAll('data: line 1\ndata: line 2\ndata:\ndata:  two spaces\n\n'),
    [{ event: 'message', data: 'line 1\nline 2\n\n two spaces', id: '' }],
    "multi-line data joins with '\\n'; only one space after the colon is dropped",
  )
  t.same(
    parseAll(': a comment\n:\nid: 3\ndata\n\nevent: progress\n\n'),
    [{ event: 'message', data: '', id: '3' }],
    'comments ignored, a field without a colon has an empty value, an event without data is not sent',
  )
  t.same(
    parseAll('id: 4\ndata: a\n\ndata: b\n\nid\ndata: c\n\n'),
    [
      { event: 'message', data: 'a', id: '4' },
      { event: 'message', data: 'b', id: '4' },
      { event: 'message', data: 'c', id: '' },
    ],
    'the id persists until reset',
  )
  t.same(
    parseAll('\uFEFFdata: bom\n\ndata: cut off'),
    [{ event: 'message', data: 'bom', id: '' }],
    'a BOM is skipped; an unterminated event is dropped',
  )
  const p = new SseParser()
  p.push('retry: 1500\nretry: x\nunknown: 1\n\n')
  t.equal(p.retryMs, 1500, 'retry is read, a bad one ignored')
  t.same(parseAll('data:{"k":"a\\nb"}\n\n')[0]?.data, '{"k":"a\\nb"}', 'no space after the colon')
})

type Script = (req: http.IncomingMessage, res: http.ServerResponse, n: number) => void

/** An HTTP server that answers the n-th watch request with `script`. */
async function scripted(t: { teardown(fn: () => unknown): void }, script: Script) {
  const requests: { url: string; headers: http.IncomingHttpHeaders }[] = []
  const closed: number[] = []
  const srv = http.createServer((req, res) => {
    const n = requests.length
    requests.push({ url: req.url ?? '', headers: req.headers })
    res.on('close', () => closed.push(n))
    script(req, res, n)
  })
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r))
  t.teardown(
    () =>
      new Promise<void>((r) => {
        srv.closeAllConnections()
        srv.close(() => r())
      }),
  )
  const baseUrl = `http://127.0.0.1:${(srv.address() as AddressInfo).port}/v1`
  return { baseUrl, requests, closed }
}

function sse(res: http.ServerResponse) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
  res.flushHeaders()
}

function send(res: http.ServerResponse, event: string, data: string, id?: string) {
  res.write(`${id !== undefined ? `id: ${id}\n` : ''}event: ${event}\ndata: ${data}\n\n`)
}

function client(baseUrl: string) {
  return new Cairn('cairn_test', {
    baseUrl,
    retries: { limit: 3, baseDelayMs: 10, maxDelayMs: 50 },
  })
}

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms))
/** Waits (up to 5 s) for `done` to hold: what the server sees arrives when it arrives. */
const until = async (done: () => boolean) => {
  for (let i = 0; i < 250 && !done(); i++) await wait(20)
}

t.test('watch resumes after a drop and after too_slow, without repeats, until 410', async (t) => {
  const big = '18446744073709551621'
  const { baseUrl, requests } = await scripted(t, (_req, res, n) => {
    if (n === 0) {
      sse(res)
      send(res, 'progress', '{"version":"5"}')
      // One event split over writes, the way TCP may deliver it.
      res.write('id: 6\nevent: put\ndata: {"key":"a","version":"6",')
      setTimeout(() => {
        res.write(`"value":{"n":${big}},"metadata":{"m":1},"expiresAt":1900000000}\n\n`)
        setTimeout(() => res.socket?.destroy(), 20)
      }, 20)
    } else if (n === 1) {
      sse(res)
      send(res, 'progress', '{"version":"6"}')
      send(res, 'put', `{"key":"a","version":"6","value":1}`, '6')
      send(res, 'delete', '{"key":"a","version":"7"}', '7')
      send(res, 'error', '{"code":"too_slow"}')
      res.end()
    } else if (n === 2) {
      sse(res)
      send(res, 'progress', '{"version":"7"}')
      send(res, 'put', '{"key":"b","version":"9","value":"x"}', '9')
      res.end()
    } else {
      res.writeHead(410, { 'content-type': 'application/json' })
      res.end('{"error":{"code":"history_expired","message":"Too old."}}')
    }
  })
  const reconnects: ReconnectEvent[] = []
  const events: WatchEvent[] = []
  const err = await (async () => {
    for await (const ev of client(baseUrl).watch('ns', {
      prefix: 'a b',
      onReconnect: (e) => reconnects.push(e),
    })) {
      events.push(ev)
    }
  })().then(
    () => undefined,
    (e) => e,
  )
  t.same(events, [
    { type: 'progress', version: '5' },
    {
      type: 'put',
      key: 'a',
      version: '6',
      value: { n: BigInt(big) },
      metadata: { m: 1 },
      expiresAt: 1900000000,
    },
    { type: 'delete', key: 'a', version: '7' },
    { type: 'put', key: 'b', version: '9', value: 'x' },
  ])
  t.ok(err instanceof HistoryExpiredError, `then a 410 ends it: ${err}`)
  t.equal(err.status, 410)
  t.same(
    requests.map((r) => r.url),
    [
      '/v1/ns?watch=1&prefix=a%20b',
      '/v1/ns?watch=1&prefix=a%20b&since=6',
      '/v1/ns?watch=1&prefix=a%20b&since=7',
      '/v1/ns?watch=1&prefix=a%20b&since=9',
    ],
    'each reconnection resumes after the last version seen',
  )
  t.equal(requests[0]!.headers.accept, 'text/event-stream')
  t.equal(requests[0]!.headers['x-api-key'], 'cairn_test')
  t.same(
    reconnects.map((r) => [r.error.constructor, r.since, r.attempt]),
    [
      [NetworkError, '6', 1],
      [TooSlowError, '7', 1],
      [NetworkError, '9', 1],
    ],
    'told why, from where, and the back-off started anew after each working stream',
  )
})

t.test('since and a progress older than what was seen', async (t) => {
  const { baseUrl, requests } = await scripted(t, (_req, res, n) => {
    sse(res)
    if (n === 0) {
      send(res, 'progress', '{"version":"100"}')
      send(res, 'put', '{"key":"k","version":"101","value":1}', '101')
      send(res, 'progress', '{"version":"104"}')
      res.end()
    } else {
      send(res, 'progress', '{"version":"104"}')
      send(res, 'put', '{"key":"k","version":"105","value":2}', '105')
    }
  })
  const seen: WatchEvent[] = []
  const ctl = new AbortController()
  for await (const ev of client(baseUrl).watch('ns', { since: '100', signal: ctl.signal })) {
    seen.push(ev)
    if (seen.length === 4) ctl.abort()
  }
  t.same(seen, [
    { type: 'progress', version: '100' },
    { type: 'put', key: 'k', version: '101', value: 1 },
    { type: 'progress', version: '104' },
    { type: 'put', key: 'k', version: '105', value: 2 },
  ])
  t.same(
    requests.map((r) => r.url),
    ['/v1/ns?watch=1&since=100', '/v1/ns?watch=1&since=104'],
    'a progress mark moves the resume point; the reopening progress is not repeated',
  )
})

t.test('the heartbeat progress of a quiet stream is handed out each time', async (t) => {
  // The server sends progress again after 15 s without a change, at the same version: a
  // consumer may take it as the stream's sign of life.
  const { baseUrl } = await scripted(t, (_req, res) => {
    sse(res)
    send(res, 'progress', '{"version":"7"}')
    send(res, 'progress', '{"version":"7"}')
    send(res, 'progress', '{"version":"7"}')
  })
  const seen: WatchEvent[] = []
  const ctl = new AbortController()
  for await (const ev of client(baseUrl).watch('ns', { signal: ctl.signal })) {
    seen.push(ev)
    if (seen.length === 3) ctl.abort()
  }
  t.same(seen, Array(3).fill({ type: 'progress', version: '7' }))
})

t.test('errors that end a watch at once', async (t) => {
  const { baseUrl, requests } = await scripted(t, (_req, res, n) => {
    if (n === 0) {
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '1' })
      res.end('{"error":{"code":"watch_limit","message":"5 watches are open."}}')
    } else if (n === 1) {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end('{"keys":[]}')
    } else {
      res.writeHead(404, { 'content-type': 'application/json' })
      res.end('{"error":{"code":"namespace_not_found","message":"No such namespace."}}')
    }
  })
  const kv = client(baseUrl)
  const first = async () => {
    for await (const _ of kv.watch('ns')) return 'event'
    return 'end'
  }
  await t.rejects(first(), WatchLimitError, 'watch_limit is not retried')
  await t.rejects(first(), InvalidResponseError, 'a JSON answer is not an event stream')
  await t.rejects(first(), { name: 'NotFoundError', code: 'namespace_not_found' })
  t.equal(requests.length, 3, 'one request each')
})

t.test('a gateway error and a server down are retried with back-off', async (t) => {
  const { baseUrl, requests } = await scripted(t, (_req, res, n) => {
    if (n < 2) {
      res.writeHead(503, { 'content-type': 'text/html' })
      res.end('<html>busy</html>')
      return
    }
    sse(res)
    send(res, 'progress', '{"version":"1"}')
  })
  const reconnects: ReconnectEvent[] = []
  const it = client(baseUrl).watch('ns', { onReconnect: (e) => reconnects.push(e) })
  t.same((await it.next()).value, { type: 'progress', version: '1' })
  await it.return?.()
  t.same(
    reconnects.map((r) => [r.error.status, r.attempt]),
    [
      [503, 1],
      [503, 2],
    ],
  )
  t.equal(requests.length, 3)

  const dead = client('http://127.0.0.1:9/v1').watch('ns', { maxReconnects: 2 })
  await t.rejects(dead.next(), NetworkError, 'after maxReconnects failures the last one is thrown')
})

t.test('return() and abort stop a pending watch at once and close the connection', async (t) => {
  const { baseUrl, closed } = await scripted(t, (_req, res) => {
    sse(res)
    send(res, 'progress', '{"version":"3"}')
  })
  const kv = client(baseUrl)
  const it = kv.watch('ns')
  t.same((await it.next()).value, { type: 'progress', version: '3' })
  const pending = it.next()
  const started = Date.now()
  await it.return?.()
  t.same(await pending, { done: true, value: undefined }, 'the pending next() ends as done')
  t.ok(Date.now() - started < 1000, 'at once')
  await until(() => closed.length >= 1)
  t.same(closed, [0], 'the server saw the connection close')

  const ctl = new AbortController()
  const got: WatchEvent[] = []
  setTimeout(() => ctl.abort(), 100)
  for await (const ev of kv.watch('ns', { signal: ctl.signal })) got.push(ev)
  t.same(got, [{ type: 'progress', version: '3' }], 'abort ends the loop without an error')
  await until(() => closed.length >= 2)
  t.same(closed, [0, 1])

  const aborted = AbortSignal.abort()
  const none: WatchEvent[] = []
  for await (const ev of kv.watch('ns', { signal: aborted })) none.push(ev)
  t.same(none, [], 'an aborted signal sends nothing')
})

t.test('a silent connection is replaced after idleTimeoutMs', async (t) => {
  const { baseUrl, requests } = await scripted(t, (_req, res, n) => {
    sse(res)
    if (n === 0) send(res, 'progress', '{"version":"8"}')
    else send(res, 'put', '{"key":"z","version":"9","value":null}', '9')
  })
  const reconnects: ReconnectEvent[] = []
  const it = client(baseUrl).watch('ns', {
    idleTimeoutMs: 200,
    onReconnect: (e) => reconnects.push(e),
  })
  t.same((await it.next()).value, { type: 'progress', version: '8' })
  t.same((await it.next()).value, { type: 'put', key: 'z', version: '9', value: null })
  await it.return?.()
  t.ok(reconnects[0]?.error instanceof TimeoutError, 'a TimeoutError')
  t.equal(requests[1]?.url, '/v1/ns?watch=1&since=8')
})
