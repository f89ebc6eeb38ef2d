// HTTP framing over raw sockets: whatever a client sends, a write is never applied without
// its answer. Where the answer must come from a proxy in front (docs/deployment.md), the test
// proves our side applied nothing.
import net from 'node:net'
import t from 'tap'
import { Client } from './contract/http.js'
import { setup } from './contract/setup.js'
import { exchange as rawExchange } from '../helpers/raw-exchange.js'

const { srv, api } = await setup(t)
await api.createNamespace('f')
const key = api.key

/** One exchange on a raw socket to the server (helpers/raw-exchange.ts). */
const exchange = (pieces: string[], gapMs = 0, waitMs = 10_000, answers?: number) =>
  rawExchange(srv.port, pieces, gapMs, waitMs, answers)

const put = (k: string, body: string, extra = '') =>
  `PUT /v1/f/${k} HTTP/1.1\r\nHost: x\r\nx-api-key: ${key}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`
const stored = async (k: string) => (await api.get(`/f/${k}`)).status === 200

t.test('pipelined writes in one packet: refused whole, nothing applied', async (t) => {
  const r = await exchange([put('p1', '{"value":1}') + put('p2', '{"value":2}')], 0, 10_000, 2)
  const answered = r.statuses.length
  if (answered === 0) {
    t.ok(r.closed, 'the connection was refused')
    t.notOk(await stored('p1'), 'the first write was not applied')
    t.notOk(await stored('p2'), 'the second write was not applied')
  } else {
    t.same(r.statuses, [201, 201], 'or both were answered, in order')
    t.ok((await stored('p1')) && (await stored('p2')))
  }
})

t.test('a pipelined write after a DELETE in one packet applies nothing unanswered', async (t) => {
  await api.mustPut('f', 'd1', 'x')
  const del = `DELETE /v1/f/d1 HTTP/1.1\r\nHost: x\r\nx-api-key: ${key}\r\n\r\n`
  const r = await exchange([del + put('d2', '{"value":2}')], 0, 10_000, 2)
  if (r.statuses.length === 0) t.ok(await stored('d1'), 'the unanswered delete was not applied')
  else t.same(r.statuses, [200, 201], 'answered in order')
})

t.test('pipelined writes in later packets: answered in order, or refused whole', async (t) => {
  // 20 ms apart, each write is read after the one before has paused the connection, and
  // waits in the socket until that one is answered. On a busy machine the server may still
  // read two at once, which is then the one-packet case: the connection is refused and
  // nothing is applied. Either way no write is applied without its answer.
  const r = await exchange(
    [put('l1', '{"value":1}'), put('l2', '{"value":2}'), put('l3', '{"value":3}')],
    20,
    10_000,
    3,
  )
  const applied = [await stored('l1'), await stored('l2'), await stored('l3')]
  t.comment(`answers: ${JSON.stringify(r.statuses)}, applied: ${JSON.stringify(applied)}`)
  t.same(
    r.statuses,
    r.statuses.map(() => 201),
    'every answer is a 201, in order',
  )
  t.same(
    applied,
    applied.map((_, i) => i < r.statuses.length),
    'exactly the answered writes were applied',
  )
})

t.test('pipelined reads in one packet are all answered', async (t) => {
  await api.mustPut('f', 'r', 'read me')
  const get = `GET /v1/f/r HTTP/1.1\r\nHost: x\r\nx-api-key: ${key}\r\n\r\n`
  const r = await exchange([get + get + get], 0, 10_000, 3)
  t.same(r.statuses, [200, 200, 200])
})

t.test('HEAD is GET without the body, so the next answer on the socket parses', async (t) => {
  t.equal((await api.put('/f/h', { value: 'read me ✓', metadata: { tag: 'é' } })).status, 201)
  for (const path of [
    '/v1/f/h',
    '/v1/f/h?metadata=1',
    '/v1/f/missing',
    '/v1/usage',
    '/login',
    '/no/such/page',
    '/readyz',
  ]) {
    const one = (method: string) =>
      `${method} ${path} HTTP/1.1\r\nHost: x\r\nx-api-key: ${key}\r\n\r\n`
    const r = await exchange([one('HEAD') + one('GET')], 0, 10_000, 2)
    t.equal(r.statuses.length, 2, `HEAD ${path}, then GET: two answers`)
    const [head, get] = r.text.split(/(?=HTTP\/1\.1 )/) as [string, string]
    t.match(head, /\r\n\r\n$/, `HEAD ${path}: headers only`)
    t.equal(r.statuses[0], r.statuses[1], `HEAD ${path}: GET's status (${r.statuses[1]})`)
    const header = (text: string, name: string) =>
      new RegExp(`^${name}: (.*)\r$`, 'im').exec(text)?.[1]
    const body = get.slice(get.indexOf('\r\n\r\n') + 4)
    t.equal(header(head, 'content-length'), String(Buffer.byteLength(body, 'latin1')), 'its length')
    if (path.startsWith('/v1/f/h'))
      t.equal(header(head, 'etag'), header(get, 'etag'), 'and its ETag')
  }
  const watch = await exchange(
    [
      `HEAD /v1/f?watch=1 HTTP/1.1\r\nHost: x\r\nx-api-key: ${key}\r\naccept: text/event-stream\r\n\r\n`,
    ],
    0,
    10_000,
    1,
  )
  t.same(watch.statuses, [405], 'a watch is a stream: HEAD of it is refused')
})

t.test('two Content-Length headers: 400, closed, nothing applied', async (t) => {
  const body = '{"value":3}'
  const payload = `PUT /v1/f/cl HTTP/1.1\r\nHost: x\r\nx-api-key: ${key}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\ncontent-length: 5\r\n\r\n${body}`
  const r = await exchange([payload])
  t.same(r.statuses, [400])
  t.match(r.text, /"code":"invalid_request"/)
  t.ok(r.closed, 'the connection is closed')
  t.notOk(await stored('cl'), 'nothing applied')
  const same = await exchange([
    payload.replace('content-length: 5', `content-length: ${body.length}`),
  ])
  t.same(same.statuses, [400], 'a repeated Content-Length is refused even when equal')
})

t.test('Transfer-Encoding other than chunked: 400, nothing applied', async (t) => {
  const r = await exchange([
    `PUT /v1/f/te HTTP/1.1\r\nHost: x\r\nx-api-key: ${key}\r\ncontent-type: application/json\r\ntransfer-encoding: gzip, chunked\r\n\r\nb\r\n{"value":4}\r\n0\r\n\r\n`,
  ])
  t.same(r.statuses, [400])
  t.notOk(await stored('te'))
})

t.test('a chunked body is read whole and applied once', async (t) => {
  const r = await exchange([
    `PUT /v1/f/ch HTTP/1.1\r\nHost: x\r\nx-api-key: ${key}\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n5\r\n{"val\r\n6\r\nue":5}\r\n0\r\n\r\n`,
  ])
  t.same(r.statuses, [201])
  t.equal((await api.get('/f/ch')).json?.value, 5)
})

// The library's own gaps (docs/deployment.md): no answer comes, and nothing is applied.
for (const [name, payload, k] of [
  [
    'Content-Length with Transfer-Encoding',
    `PUT /v1/f/clte HTTP/1.1\r\nHost: x\r\nx-api-key: KEY\r\ncontent-type: application/json\r\ncontent-length: 11\r\ntransfer-encoding: chunked\r\n\r\nb\r\n{"value":4}\r\n0\r\n\r\n`,
    'clte',
  ],
  [
    'a non-numeric Content-Length',
    `PUT /v1/f/badcl HTTP/1.1\r\nHost: x\r\nx-api-key: KEY\r\ncontent-type: application/json\r\ncontent-length: 1x\r\n\r\n{"value":6}`,
    'badcl',
  ],
  [
    'an HTTP/1.0 PUT',
    `PUT /v1/f/h10 HTTP/1.0\r\nHost: x\r\nx-api-key: KEY\r\ncontent-type: application/json\r\ncontent-length: 11\r\n\r\n{"value":7}`,
    'h10',
  ],
] as const) {
  t.test(`${name}: never applied without an answer`, async (t) => {
    const r = await exchange([payload.replace('KEY', key)], 0, 1500)
    if (r.statuses.length === 0) t.notOk(await stored(k), 'no answer, and nothing applied')
    else t.equal(r.statuses[0]! >= 400 || (await stored(k)), true, 'an answer for what was done')
  })
}

/** The answers whole in `raw` (latin1), in order; one cut short after them is left out. */
function answersIn(raw: string): { status: number; body: string }[] {
  const answers: { status: number; body: string }[] = []
  let at = 0
  while (at < raw.length) {
    const end = raw.indexOf('\r\n\r\n', at)
    if (end < 0) return answers
    const head = raw.slice(at, end)
    const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1])
    const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1])
    if (!status || !Number.isFinite(length)) throw new Error(`not an answer: ${head.slice(0, 80)}`)
    if (end + 4 + length > raw.length) return answers
    answers.push({ status, body: raw.slice(end + 4, end + 4 + length) })
    at = end + 4 + length
  }
  return answers
}

t.test(
  'a client pipelining reads it does not take is closed, not answered in memory',
  async (t) => {
    // 64 answers of about 900 KB asked in one packet: more than the kernel holds for a client
    // that does not read. The server once kept every answer it could not send (one
    // connection grew the process without bound); now it holds one, and a request that
    // arrives behind an unfinished answer closes the connection.
    const value = 'v'.repeat(900_000)
    await api.mustPut('f', 'big', value)
    const expected = (await api.get('/f/big')).text
    const asked = 64
    const get = `GET /v1/f/big HTTP/1.1\r\nHost: x\r\nx-api-key: ${key}\r\n\r\n`
    const s = net.connect(srv.port, '127.0.0.1')
    s.pause()
    await new Promise((r) => s.once('connect', r))
    s.write(get.repeat(asked))
    // Not reading for a moment: the server has the whole packet and answers what it can.
    await new Promise((r) => setTimeout(r, 300))
    const chunks: Buffer[] = []
    const closed = await new Promise<boolean>((resolve) => {
      const guard = setTimeout(() => resolve(false), 30_000)
      s.on('data', (d: Buffer) => chunks.push(d))
      s.on('close', () => {
        clearTimeout(guard)
        resolve(true)
      })
      s.on('error', () => {})
      s.resume()
    })
    s.destroy()
    const answers = answersIn(Buffer.concat(chunks).toString('latin1'))
    t.ok(closed, 'the server closed the connection')
    t.ok(
      answers.length < asked,
      `not every answer was kept for it (${answers.length} of ${asked} whole)`,
    )
    t.same(
      answers.filter((a) => a.status !== 200 || a.body !== expected).length,
      0,
      'every answer it got whole is the value, byte for byte',
    )
    const fresh = new Client(srv.baseUrl, key)
    const again = await fresh.get('/f/big')
    t.equal(again.text, expected, 'and a client that reads gets the whole value')
  },
)

t.test('the server still serves after every one of these', async (t) => {
  const fresh = new Client(srv.baseUrl, key)
  t.equal((await fresh.put('/f/after', { value: 1 })).status, 201)
  t.equal((await fresh.get('/f/after')).json?.value, 1)
})
