// Hostile and broken clients: bodies past the limit, garbage, wrong types, bad escapes,
// deep JSON, slow and vanishing clients, thousands of idle connections. The server answers
// each clearly, stays up, and nothing half-written is ever stored.
import net from 'node:net'
import t, { type Test } from 'tap'
import { logIn } from '../helpers/dashboard-api.js'
import { startServer } from '../helpers/server.js'
import { Client, sleep } from './contract/http.js'
import { plansFile } from './contract/setup.js'

const srv = await startServer({ plans: plansFile({ id: 'small', maxValueBytes: 4096 }) })
t.teardown(() => srv.stop())
const acct = await srv.createAccount(undefined, { plan: 'small' })
const api = new Client(srv.baseUrl, acct.apiKey)
await api.createNamespace('h')
await api.mustPut('h', 'stable', 'still here')

function rawSocket(): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect(srv.port, '127.0.0.1', () => resolve(s))
    s.on('error', reject)
  })
}

/** Writes raw bytes and collects whatever comes back until the server closes or `ms` pass. */
async function exchange(parts: (string | Buffer)[], ms = 2000, gapMs = 0): Promise<string> {
  const s = await rawSocket()
  let got = ''
  s.on('data', (d) => {
    got += d.toString('latin1')
  })
  s.on('error', () => {})
  const closed = new Promise<void>((r) => s.on('close', () => r()))
  for (const p of parts) {
    if (s.destroyed) break
    s.write(p)
    if (gapMs) await sleep(gapMs)
  }
  await Promise.race([closed, sleep(ms)])
  s.destroy()
  return got
}

async function stillServing(t: Test) {
  const res = await api.get('/h/stable')
  t.equal(res.text, '{"value":"still here"}', 'the server still answers and the data is intact')
}

t.test('a body far past the limit is cut off with 413 and nothing is stored', async (t) => {
  const head = `PUT /v1/h/big HTTP/1.1\r\nHost: x\r\nx-api-key: ${acct.apiKey}\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n`
  const chunk = Buffer.from(`10000\r\n${'a'.repeat(0x10000)}\r\n`)
  const parts: (string | Buffer)[] = [head, '11\r\n{"value":"aaaaaa"\r\n']
  for (let i = 0; i < 100; i++) parts.push(chunk)
  const got = await exchange(parts, 3000)
  t.match(got, /^HTTP\/1\.1 413/, 'chunked upload without a length is stopped at the limit')
  t.match(got, /value_too_large/)
  t.equal((await api.get('/h/big')).status, 404)
  const declared = await exchange([
    `PUT /v1/h/big HTTP/1.1\r\nHost: x\r\nx-api-key: ${acct.apiKey}\r\ncontent-length: 999999999\r\n\r\n{"value":`,
  ])
  t.match(declared, /^HTTP\/1\.1 413/, 'a declared length past the limit is refused before reading')
  await stillServing(t)
})

t.test(
  'the dashboard reads a value body only for a signed-in caller, up to its plan',
  async (t) => {
    // 20 MiB declared, 1 MiB sent: the answer must come from the request's head alone.
    const big = (cookie: string) => [
      `PUT /dashboard/api/namespaces/h/value?key=k HTTP/1.1\r\nHost: 127.0.0.1:${srv.port}\r\nOrigin: ${srv.url}\r\n${cookie}content-type: application/json\r\ncontent-length: ${20 * 1024 * 1024}\r\n\r\n`,
      Buffer.alloc(1024 * 1024, 0x20),
    ]
    t.match(await exchange(big(''), 3000), /^HTTP\/1\.1 401/, 'no session: 401 before the body')
    const owner = await srv.createAccount(undefined, { plan: 'small', password: 'long enough pw' })
    const session = await logIn(srv.url, owner.email, 'long enough pw')
    t.equal(session.status, 200)
    t.match(
      await exchange(big(`Cookie: ${session.cookie}\r\nx-csrf-token: ${session.csrf}\r\n`), 3000),
      /^HTTP\/1\.1 413/,
      "signed in: 413 past the plan's limit, before the body is all sent",
    )
    await stillServing(t)
  },
)

t.test('the dashboard takes an import only from a signed-in caller with the token', async (t) => {
  // 20 MiB declared, 1 MiB sent: both refusals come from the request's head alone, so a
  // forged upload never reaches the import's temporary file.
  const big = (headers: string) => [
    `POST /dashboard/api/namespaces/h/import HTTP/1.1\r\nHost: 127.0.0.1:${srv.port}\r\nOrigin: ${srv.url}\r\n${headers}content-type: application/x-ndjson\r\ncontent-length: ${20 * 1024 * 1024}\r\n\r\n`,
    Buffer.alloc(1024 * 1024, 0x20),
  ]
  t.match(await exchange(big(''), 3000), /^HTTP\/1\.1 401/, 'no session: 401 before the body')
  const owner = await srv.createAccount(undefined, { plan: 'small', password: 'long enough pw' })
  const session = await logIn(srv.url, owner.email, 'long enough pw')
  const cookie = `Cookie: ${session.cookie}\r\n`
  t.match(
    await exchange(big(`${cookie}x-csrf-token: forged\r\n`), 3000),
    /^HTTP\/1\.1 403[\s\S]*csrf_failed/,
    'a forged token: 403 before the body',
  )
  await stillServing(t)
})

t.test('malformed requests get clear 4xx answers', async (t) => {
  const cases: [string, string | Buffer, Record<string, string>, number, string][] = [
    ['truncated JSON', '{"value":[1,2', {}, 400, 'invalid_json'],
    ['a lone surrogate escape is fine JSON', '{"value":"\\ud800"}', {}, 201, ''],
    ['NUL byte raw in a string', Buffer.from('{"value":"a\u0000b"}'), {}, 400, 'invalid_json'],
    [
      'a BOM before the body',
      Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"value":1}')]),
      {},
      400,
      'invalid_json',
    ],
    ['huge exponent is kept as text', '{"value":1e999999}', {}, 201, ''],
    [
      'wrong content type',
      '{"value":1}',
      { 'content-type': 'text/xml' },
      415,
      'unsupported_media_type',
    ],
    [
      'multipart',
      '--x\r\n',
      { 'content-type': 'multipart/form-data; boundary=x' },
      415,
      'unsupported_media_type',
    ],
  ]
  let i = 0
  for (const [what, body, headers, status, code] of cases) {
    const res = await api.put(`/h/m${i++}`, body, { headers })
    t.equal(res.status, status, what)
    if (code) t.equal(res.json?.error?.code, code, what)
    t.notMatch(res.text, /at .*\.(ts|js):\d+/, `${what}: no stack trace`)
  }
  for (const raw of ['%', '%%41', '%u0041', '%C3%28', 'a%00', '..']) {
    const res = await api.get(`/h/${raw}`)
    t.equal(res.status, 400, `key ${raw}`)
  }
  const deep = await api.put('/h/deep', `{"value":${'{"a":'.repeat(600)}1${'}'.repeat(600)}}`)
  t.equal(deep.status, 400, 'objects nested past the limit')
  const wide = await api.put('/h/wide', `{"value":[${'0,'.repeat(1900)}0]}`)
  t.equal(wide.status, 201, 'wide but shallow JSON within the size limit is fine')
  await stillServing(t)
})

t.test('a query that is not percent-encoded UTF-8, or names a parameter twice: 400', async (t) => {
  await api.mustPut('h', '%zz-literal', 1)
  await api.mustPut('h', 'a-1', 1)
  for (const query of [
    'prefix=%zz',
    'prefix=%',
    'prefix=%FF',
    'prefix=%ED%A0%80',
    'prefix=a&prefix=b',
  ]) {
    for (const method of ['GET', 'DELETE']) {
      const res = await api.req(method, `/h?${query}`)
      t.equal(res.status, 400, `${method} ?${query}`)
      const code = method === 'DELETE' ? 'invalid_prefix' : 'invalid_request'
      t.equal(res.json?.error?.code, code, `${method} ?${query}`)
    }
  }
  t.equal((await api.get('/h/a-1?metadata=1&metadata=1')).status, 400, 'a GET the same')
  t.equal(
    (await api.get('/h/%25zz-literal')).status,
    200,
    'the key a literal prefix would match stays',
  )
  const listed = await api.get('/h?prefix=%25zz')
  t.same(listed.json.keys, ['%zz-literal'], 'an encoded % is a %')
  t.same((await api.get('/h?prefix=a%2D')).json.keys, ['a-1'])
})

t.test('garbage that is not HTTP does not hurt the server', async (t) => {
  await exchange([Buffer.from([0, 1, 2, 3, 255, 254, 13, 10, 13, 10])])
  await exchange([
    'GET /v1/h/stable HTTP/1.1\r\nHost: x\r\n' + 'X-Long: ' + 'a'.repeat(100_000) + '\r\n\r\n',
  ])
  await exchange(['GET /v1/h/stable HTTP/1.1\r\n' + 'X: y\r\n'.repeat(5000) + '\r\n'])
  await stillServing(t)
})

t.test('a client that sends half a body and vanishes leaves nothing behind', async (t) => {
  for (let i = 0; i < 20; i++) {
    await exchange(
      [
        `PUT /v1/h/half${i} HTTP/1.1\r\nHost: x\r\nx-api-key: ${acct.apiKey}\r\ncontent-length: 100\r\n\r\n{"value":"only part`,
      ],
      50,
    )
  }
  for (let i = 0; i < 20; i++)
    t.equal((await api.get(`/h/half${i}`)).status, 404, `half${i} not stored`)
  await stillServing(t)
})

t.test('a slow client is served when it finally completes, others meanwhile', async (t) => {
  const body = '{"value":"slowly"}'
  const slow = exchange(
    [
      `PUT /v1/h/slow HTTP/1.1\r\nHost: x\r\nx-api-key: ${acct.apiKey}\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n`,
      ...body.split(''),
    ],
    4000,
    100,
  )
  await sleep(300)
  await stillServing(t)
  t.match(await slow, /^HTTP\/1\.1 201/, 'the slow request completes')
  t.equal((await api.get('/h/slow')).text, '{"value":"slowly"}')
})

t.test('10,000 idle connections do not stop the server', async (t) => {
  const sockets: net.Socket[] = []
  t.teardown(() => {
    for (const s of sockets) s.destroy()
  })
  let failed = 0
  for (let i = 0; i < 10_000; i++) {
    try {
      sockets.push(await rawSocket())
    } catch {
      failed++
    }
    if (i % 2000 === 1999) await stillServing(t)
  }
  t.equal(failed, 0, `${sockets.length} connections open`)
  await stillServing(t)
})
