// Authentication and key permissions: x-api-key, Bearer, 401, read-only and scoped keys
// (403 forbidden), revoked and rotated keys.
import { once } from 'node:events'
import fs from 'node:fs'
import net from 'node:net'
import t from 'tap'
import { Client } from './http.js'
import { cli } from './cli.js'
import { freshNamespace, plansFile, setup } from './setup.js'

// A plan that takes large values is on offer, so a body's size alone is no reason to drop it.
const { srv, api, email } = await setup(t, {
  plans: plansFile({ id: 'big', maxValueBytes: 64 * 1024 * 1024 }),
})
const ns = await freshNamespace(api)
const other = await freshNamespace(api)
await api.mustPut(ns, 'k', 'v')

t.test('401 unauthorized without a key, with an unknown one, or a malformed header', async (t) => {
  const cases: [string, Record<string, string>][] = [
    ['no key', {}],
    ['unknown key', { 'x-api-key': 'cairn_00000000000000000000000000000000' }],
    ['garbage key', { 'x-api-key': 'nope' }],
    ['empty key', { 'x-api-key': '' }],
    ['unknown bearer', { authorization: 'Bearer cairn_00000000000000000000000000000000' }],
    ['basic auth', { authorization: `Basic ${Buffer.from(`x:${api.key}`).toString('base64')}` }],
    ['key in the wrong scheme', { authorization: `Token ${api.key}` }],
  ]
  for (const [what, headers] of cases) {
    const res = await api.get(`/${ns}/k`, { key: null, headers })
    t.equal(res.status, 401, what)
    t.equal(res.json?.error?.code, 'unauthorized', what)
    t.type(res.json?.error?.message, 'string')
    t.notMatch(res.text, api.key, 'the key is never echoed')
  }
  const list = await api.get('/namespaces', { key: null })
  t.equal(list.status, 401, 'namespace routes need a key too')
  const usage = await api.get('/usage', { key: null })
  t.equal(usage.status, 401, 'usage needs a key too')
})

t.test('Authorization: Bearer works like x-api-key', async (t) => {
  const res = await api.get(`/${ns}/k`, {
    key: null,
    headers: { authorization: `Bearer ${api.key}` },
  })
  t.equal(res.status, 200)
  t.equal(res.text, '{"value":"v"}')
  const put = await api.put(
    `/${ns}/b`,
    { value: 1 },
    { key: null, headers: { authorization: `Bearer ${api.key}` } },
  )
  t.equal(put.status, 201)
  const lower = await api.get(`/${ns}/k`, {
    key: null,
    headers: { authorization: `bearer ${api.key}` },
  })
  t.equal(lower.status, 200, 'the scheme name is case-insensitive')
})

t.test('a read-only key reads but cannot write: 403 forbidden', async (t) => {
  const ro = new Client(
    srv.baseUrl,
    (await cli(srv, ['key', 'create', '--email', email, '--name', 'ro', '--permission', 'read']))
      .secret,
  )
  t.equal((await ro.get(`/${ns}/k`)).status, 200)
  t.equal((await ro.get(`/${ns}`)).status, 200)
  t.equal((await ro.get('/namespaces')).status, 200)
  t.equal((await ro.get('/usage')).status, 200)
  const attempts: [string, () => Promise<{ status: number; json: any }>][] = [
    ['PUT', () => ro.put(`/${ns}/k`, { value: 'ro' })],
    ['DELETE', () => ro.del(`/${ns}/k`)],
    ['create namespace', () => ro.post('/namespaces', { name: 'ro-made' })],
    ['delete namespace', () => ro.del(`/namespaces/${other}`)],
  ]
  for (const [what, go] of attempts) {
    const res = await go()
    t.equal(res.status, 403, what)
    t.equal(res.json?.error?.code, 'forbidden', what)
  }
  t.equal((await api.get(`/${ns}/k`)).text, '{"value":"v"}', 'nothing changed')
  t.equal((await api.get(`/${other}`)).status, 200, 'the namespace is still there')
})

t.test('a key limited to some namespaces gets 403 forbidden elsewhere', async (t) => {
  const scoped = new Client(
    srv.baseUrl,
    (await cli(srv, ['key', 'create', '--email', email, '--name', 'scoped', '--namespaces', ns]))
      .secret,
  )
  t.equal((await scoped.get(`/${ns}/k`)).status, 200)
  t.equal((await scoped.put(`/${ns}/s`, { value: 1 })).status, 201)
  for (const [what, res] of [
    ['GET', await scoped.get(`/${other}/k`)],
    ['PUT', await scoped.put(`/${other}/k`, { value: 1 })],
    ['list', await scoped.get(`/${other}`)],
    ['delete namespace', await scoped.del(`/namespaces/${other}`)],
  ] as const) {
    t.equal(res.status, 403, what)
    t.equal(res.json?.error?.code, 'forbidden', what)
  }
  t.equal((await api.get(`/${other}/k`)).status, 404, 'the write outside the scope did not happen')

  const names = (await scoped.get('/namespaces')).json.namespaces.map(
    (n: { name: string }) => n.name,
  )
  t.same(names, [ns], 'GET /namespaces lists only its namespaces')
  const usage = (await scoped.get('/usage')).json
  t.same(
    usage.storage.namespaces.map((n: { name: string }) => n.name),
    [ns],
    'GET /usage shows the storage of only its namespaces',
  )
  const full = (await api.get('/usage')).json
  t.ok(full.storage.namespaces.length >= 2, 'an unlimited key sees them all')
  t.equal(
    usage.storage.bytes,
    full.storage.namespaces.find((n: { name: string }) => n.name === ns).bytes,
  )
  t.equal(usage.today.requests, full.today.requests - 1, 'request counters stay account-wide')
})

t.test('revoked and rotated keys get 401; the new secret works', async (t) => {
  const made = await cli(srv, ['key', 'create', '--email', email, '--name', 'temp'])
  const temp = new Client(srv.baseUrl, made.secret)
  t.equal((await temp.get(`/${ns}/k`)).status, 200)
  const rotated = await cli(srv, ['key', 'rotate', '--email', email, '--id', made.id])
  t.not(rotated.secret, made.secret)
  t.equal((await temp.get(`/${ns}/k`)).status, 401, 'the old secret dies at once')
  const fresh = new Client(srv.baseUrl, rotated.secret)
  t.equal((await fresh.get(`/${ns}/k`)).status, 200, 'the new secret works')
  await cli(srv, ['key', 'revoke', '--email', email, '--id', made.id])
  const res = await fresh.get(`/${ns}/k`)
  t.equal(res.status, 401, 'a revoked key is refused')
  t.equal(res.json.error.code, 'unauthorized')
  t.equal((await api.get(`/${ns}/k`)).status, 200, "the account's other keys still work")
})

t.test('large bodies sent with keys nobody has are answered, not held', async (t) => {
  const pid = srv.proc!.pid!
  const rss = () =>
    Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024
  const BODY = 24 * 1024 * 1024
  const chunk = Buffer.alloc(64 * 1024, 0x20)
  /** A PUT of BODY bytes with a made-up key of the right shape; resolves with the status line. */
  const send = (i: number) =>
    new Promise<{ status: string; socket: net.Socket }>((resolve, reject) => {
      const s = net.connect(srv.port, '127.0.0.1')
      let got = ''
      s.on('error', reject)
      s.on('data', (d) => {
        got += d.toString('latin1')
      })
      s.on('connect', async () => {
        const key = `cairn_${String(i).padStart(32, 'x')}`
        s.write(
          `PUT /v1/${ns}/big HTTP/1.1\r\nHost: x\r\nx-api-key: ${key}\r\ncontent-type: application/json\r\ncontent-length: ${BODY}\r\n\r\n`,
        )
        for (let sent = 0; sent < BODY && !s.destroyed; sent += chunk.length)
          if (!s.write(chunk)) await once(s, 'drain')
        // The whole body is in the server's hands (or dropped by it) once the answer is here.
        while (!got.includes('\r\n\r\n') && !s.destroyed) await once(s, 'data')
        resolve({ status: got.split('\r\n')[0]!, socket: s })
      })
    })
  const before = rss()
  const sent = await Promise.all([1, 2, 3, 4].map(send))
  const grew = rss() - before
  for (const { status, socket } of sent) {
    t.match(status, /^HTTP\/1\.1 (401|429)/, 'refused')
    socket.destroy()
  }
  t.comment(`server RSS grew ${(grew / 1048576).toFixed(1)} MiB for 4 x 24 MiB`)
  t.ok(grew < 32 * 1024 * 1024, 'the server did not keep the bodies')
  t.equal((await api.get(`/${ns}/big`)).status, 404)
})

/** Sends raw bytes and resolves with the status line of the answer ('' when none came). */
function statusOf(parts: (string | Buffer)[], ms = 5000): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect(srv.port, '127.0.0.1')
    let got = ''
    const done = () => {
      s.destroy()
      resolve(got.split('\r\n')[0] ?? '')
    }
    const timer = setTimeout(done, ms)
    s.on('error', () => {})
    s.on('data', (d) => {
      got += d.toString('latin1')
      if (got.includes('\r\n\r\n')) {
        clearTimeout(timer)
        done()
      }
    })
    s.on('connect', async () => {
      try {
        for (const p of parts) if (!s.write(p)) await once(s, 'drain')
      } catch {
        // Cut off while sending: the answer, if any, is what counts.
      }
    })
  })
}

t.test('a body sent with Connection: close is answered, whatever the answer', async (t) => {
  const head = (key: string, length: number) =>
    `PUT /v1/${ns}/closing HTTP/1.1\r\nHost: x\r\nx-api-key: ${key}\r\ncontent-type: application/json\r\ncontent-length: ${length}\r\nconnection: close\r\n\r\n`
  const small = '{"value":"a small body, 30 b"}'
  const unknown = `cairn_${'c'.repeat(32)}`
  t.match(await statusOf([head(unknown, small.length), small]), /^HTTP\/1\.1 401/, 'unknown key')
  // A key made a moment ago: on a shared store the first request with it waits for its load.
  const fresh = await cli(srv, ['key', 'create', '--email', email, '--name', 'closing'])
  const big = Buffer.alloc(4 * 1024 * 1024, 0x20)
  t.match(
    await statusOf([head(fresh.secret, big.length), big], 20_000),
    /^HTTP\/1\.1 413/,
    'a body past the plan: 413, not a reset',
  )
  const again = await cli(srv, ['key', 'create', '--email', email, '--name', 'closing2'])
  t.match(
    await statusOf([head(again.secret, small.length), small]),
    /^HTTP\/1\.1 20[01]/,
    'and a body within it is stored',
  )
})
