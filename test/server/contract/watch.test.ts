// Watching changes: GET /{ns}?watch=1 as Server-Sent Events and as a WebSocket, resuming with
// since and Last-Event-ID, history_expired, watch limits, slow consumers. backends.test.ts
// runs this file again on Redis Cluster.
import net from 'node:net'
import t from 'tap'
import WebSocket from 'ws'
import { Client } from './http.js'
import { freshNamespace, otherAccount, setup } from './setup.js'
import { watch } from './sse.js'

const { srv, api } = await setup(t)
const open = (path: string, headers?: Record<string, string>, key = api.key) =>
  watch(srv.baseUrl, path, key, headers)

t.test('a watch opens with progress, then each change once, in version order', async (t) => {
  const ns = await freshNamespace(api)
  await api.mustPut(ns, 'before', 1)
  const w = await open(`/${ns}?watch=1`)
  t.teardown(() => w.close())
  t.equal(w.status, 200)
  t.match(w.headers['content-type'], /^text\/event-stream/)
  const [first] = await w.until(1)
  t.same(first, { event: 'progress', id: '1', data: { version: '1' } })
  await api.mustPut(ns, 'a', { x: 1 }, { metadata: { m: 1 }, ttl: 100 })
  await api.del(`/${ns}/a`)
  await api.req('PATCH', `/${ns}/n`, { body: { increment: 5 } })
  await api.post(`/${ns}`, {
    ops: [
      { op: 'put', key: 'b', value: [1] },
      { op: 'put', key: 'c', value: 'c' },
    ],
  })
  const events = await w.until(6)
  t.same(
    events.slice(1).map((e) => [e.event, e.id, e.data.key, e.data.version]),
    [
      ['put', '2', 'a', '2'],
      ['delete', '3', 'a', '3'],
      ['put', '4', 'n', '4'],
      ['put', '5', 'b', '5'],
      ['put', '6', 'c', '6'],
    ],
  )
  t.match(events[1]!.data, { value: { x: 1 }, metadata: { m: 1 } })
  t.type(events[1]!.data.expiresAt, 'number')
  t.same(events[2]!.data, { key: 'a', version: '3' })
  t.same(events[3]!.data, { key: 'n', version: '4', value: 5 })
  t.notOk('metadata' in events[4]!.data, 'metadata only when the entry has some')
})

t.test('every watcher of a namespace gets each group of changes whole and exact', async (t) => {
  // Watchers of the whole namespace share what a group of changes is sent as; a watcher with
  // a prefix, one still sending history, and one on a WebSocket each take their own way.
  const ns = await freshNamespace(api)
  await api.mustPut(ns, 'early', 'é')
  const all = [await open(`/${ns}?watch=1`), await open(`/${ns}?watch=1`)]
  const resumed = await open(`/${ns}?watch=1&since=0`)
  const narrow = await open(`/${ns}?watch=1&prefix=b`)
  const ws = new WebSocket(`${srv.baseUrl.replace(/^http/, 'ws')}/${ns}?watch=1`)
  t.teardown(() => {
    for (const w of [...all, resumed, narrow]) w.close()
    ws.close()
  })
  const got: any[] = []
  ws.on('message', (m) => got.push(JSON.parse(String(m))))
  await new Promise((r) => ws.once('open', r))
  ws.send(JSON.stringify({ apiKey: api.key }))
  for (const w of all) await w.until(1)
  await narrow.until(1)
  await resumed.until(2)
  for (let i = 0; i < 100 && got.length < 1; i++) await new Promise((r) => setTimeout(r, 20))
  // One group of three, then single writes sent together (the feed may join them).
  await api.post(`/${ns}`, {
    ops: [
      { op: 'put', key: 'a', value: { s: 'héllo ✓ 🚀' } },
      { op: 'put', key: 'b1', value: [1, 'ü'] },
      { op: 'put', key: 'c', value: null },
    ],
  })
  await Promise.all([
    api.mustPut(ns, 'b2', 'two', { metadata: { tag: 'ß' }, ttl: 100 }),
    api.del(`/${ns}/a`),
  ])
  const want = [
    ['put', 'a', { s: 'héllo ✓ 🚀' }],
    ['put', 'b1', [1, 'ü']],
    ['put', 'c', null],
  ]
  const events = await Promise.all(all.map((w) => w.until(6)))
  const tail = events[0]!.slice(4)
  t.same(
    events[0]!.slice(1, 4).map((e) => [e.event, e.data.key, e.data.value]),
    want,
    'the group, in order, values exact',
  )
  t.same(
    tail.map((e) => e.data.key).sort(),
    ['a', 'b2'],
    'then the delete and the put with metadata',
  )
  const b2 = tail.find((e) => e.data.key === 'b2')!
  t.same([b2.data.value, b2.data.metadata], ['two', { tag: 'ß' }])
  t.type(b2.data.expiresAt, 'number')
  t.same(events[1], events[0], 'a second watcher got the very same events')
  t.same(
    (await resumed.until(7)).slice(1),
    [
      { event: 'put', id: '1', data: { key: 'early', version: '1', value: 'é' } },
      ...events[0]!.slice(1),
    ],
    'a resumed watch: history, then the same',
  )
  t.same(
    (await narrow.until(3)).slice(1).map((e) => [e.id, e.data.key]),
    events[0]!.filter((e) => e.data.key?.startsWith('b')).map((e) => [e.id, e.data.key]),
    'a prefix watch: its keys only',
  )
  for (let i = 0; i < 100 && got.length < 6; i++) await new Promise((r) => setTimeout(r, 20))
  t.same(
    got.slice(1),
    events[0]!.slice(1).map((e) => ({ type: e.event, ...e.data })),
    'a WebSocket watcher: the same changes as messages',
  )
})

t.test('an expiry is a delete event, within 10 s of it', async (t) => {
  const ns = await freshNamespace(api)
  const w = await open(`/${ns}?watch=1`)
  t.teardown(() => w.close())
  await w.until(1)
  await api.mustPut(ns, 'brief', 'x', { ttl: 1 })
  const started = Date.now()
  const [, put, gone] = await w.until(3, 12_000)
  t.same([put!.event, put!.data.version], ['put', '1'])
  t.same([gone!.event, gone!.data], ['delete', { key: 'brief', version: '2' }])
  t.ok(Date.now() - started < 11_000, `delivered ${Date.now() - started} ms after the write`)
  t.equal((await api.get(`/${ns}`)).json.version, '2', 'the expiry took a version')
})

t.test('a prefix narrows the events; versions stay the namespace’s', async (t) => {
  const ns = await freshNamespace(api)
  const w = await open(`/${ns}?watch=1&prefix=user%2F`)
  t.teardown(() => w.close())
  await w.until(1)
  await api.mustPut(ns, 'other', 1)
  await api.mustPut(ns, 'user/1', 1)
  const [, put] = await w.until(2)
  t.same([put!.event, put!.data.key, put!.data.version], ['put', 'user/1', '2'])
})

t.test('a prefix watch is told, with a progress mark, of changes it passes over', async (t) => {
  // Resuming from the last version it was told, it must not reach back past the history
  // because other keys kept the namespace busy.
  const ns = await freshNamespace(api)
  const w = await open(`/${ns}?watch=1&prefix=user%2F`)
  t.teardown(() => w.close())
  await w.until(1)
  await api.mustPut(ns, 'user/1', 1)
  for (let b = 0; b < 2; b++) {
    const ops = Array.from({ length: 600 }, (_, i) => ({ op: 'put', key: `o/${b}/${i}`, value: i }))
    t.equal((await api.post(`/${ns}`, { ops })).status, 200, `600 other keys (${b + 1})`)
  }
  const events = await w.until(3)
  t.same(
    events.map((e) => [e.event, e.id]),
    [
      ['progress', '0'],
      ['put', '1'],
      ['progress', '1001'],
    ],
    'a mark once a thousand versions went by unseen',
  )
})

t.test('since replays history with no gap and no repeat; Last-Event-ID wins', async (t) => {
  const ns = await freshNamespace(api)
  for (let i = 1; i <= 5; i++) await api.mustPut(ns, `k${i}`, i)
  const w = await open(`/${ns}?watch=1&since=2`)
  t.teardown(() => w.close())
  await api.mustPut(ns, 'k6', 6)
  const events = await w.until(5)
  t.same(
    events.map((e) => [e.event, e.id]),
    [
      ['progress', '2'],
      ['put', '3'],
      ['put', '4'],
      ['put', '5'],
      ['put', '6'],
    ],
  )
  const again = await open(`/${ns}?watch=1&since=1`, { 'last-event-id': '4' })
  t.teardown(() => again.close())
  const replay = await again.until(3)
  t.same(
    replay.map((e) => e.id),
    ['4', '5', '6'],
    'an EventSource reconnecting resumes after its last event',
  )
  const bad = await open(`/${ns}?watch=1&since=x`)
  t.equal(bad.status, 400)
  const noAccept = await open(`/${ns}?watch=1`, { accept: 'application/json' })
  t.equal(noAccept.status, 400)
  const missing = await open('/nosuchns?watch=1')
  t.equal(missing.status, 404)
  t.equal(missing.body.error.code, 'namespace_not_found')
})

t.test('list, then watch from the list’s version: every change exactly once', async (t) => {
  const ns = await freshNamespace(api)
  for (let i = 0; i < 20; i++) await api.mustPut(ns, `k${i}`, i)
  let stop = false
  let written = 0
  const writer = (async () => {
    while (!stop) {
      await api.mustPut(ns, `w${written % 7}`, written)
      written++
    }
  })()
  const page = await api.get(`/${ns}?include=metadata`)
  const w = await open(`/${ns}?watch=1&since=${page.json.version}`)
  t.teardown(() => w.close())
  await new Promise((r) => setTimeout(r, 300))
  stop = true
  await writer
  const last = (await api.get(`/${ns}`)).json.version
  const expect = Number(last) - Number(page.json.version)
  const events = await w.until(expect + 1)
  const versions = events.slice(1).map((e) => Number(e.id))
  t.same(
    versions,
    Array.from({ length: expect }, (_, i) => Number(page.json.version) + 1 + i),
    `every one of ${expect} changes, once, in order`,
  )
})

t.test('a since older than the history: 410 history_expired', async (t) => {
  const ns = await freshNamespace(api)
  for (let b = 0; b < 11; b++) {
    const r = await api.post(`/${ns}`, {
      ops: Array.from({ length: 1000 }, (_, i) => ({ op: 'put', key: `k${b}-${i}`, value: i })),
    })
    t.equal(r.status, 200)
  }
  const w = await open(`/${ns}?watch=1&since=1`)
  t.equal(w.status, 410)
  t.equal(w.body.error.code, 'history_expired')
  const recent = await open(`/${ns}?watch=1&since=10500`)
  t.teardown(() => recent.close())
  t.equal(recent.status, 200, 'the last 10,000 changes are there')
  const events = await recent.until(2)
  t.same([events[0]!.id, events[1]!.id], ['10500', '10501'])
})

t.test('concurrent watches per account are limited by the plan: 429 watch_limit', async (t) => {
  const other = await otherAccount(srv)
  await other.createNamespace('w')
  const open5 = await Promise.all(
    Array.from({ length: 5 }, () => open('/w?watch=1', {}, other.key)),
  )
  t.teardown(() => {
    for (const w of open5) w.close()
  })
  t.same(
    open5.map((w) => w.status),
    [200, 200, 200, 200, 200],
  )
  const sixth = await open('/w?watch=1', {}, other.key)
  t.equal(sixth.status, 429)
  t.equal(sixth.body.error.code, 'watch_limit')
  // Over a WebSocket with the key in a header, the same refusal, before the upgrade as HTTP
  // 429, on every backend.
  const ws = new WebSocket(`${srv.baseUrl.replace(/^http/, 'ws')}/w?watch=1`, {
    headers: { 'x-api-key': other.key },
  })
  const refused = await new Promise<string>((resolve) => {
    ws.on('unexpected-response', (_req, res) => resolve(`http ${res.statusCode}`))
    ws.on('message', (m) => resolve(`message ${JSON.parse(String(m)).code}`))
    ws.on('error', () => {})
  })
  ws.terminate()
  t.equal(refused, 'http 429', 'refused before the upgrade')
  open5[0]!.close()
  let again = sixth
  for (let i = 0; i < 50 && again.status !== 200; i++) {
    await new Promise((r) => setTimeout(r, 50))
    again = await open('/w?watch=1', {}, other.key)
  }
  t.teardown(() => again.close())
  t.equal(again.status, 200, 'a closed watch gives its place back')
})

t.test('a watch is a request; the changes it delivers are counted apart', async (t) => {
  const other = await otherAccount(srv)
  await other.createNamespace('u')
  const w = await open('/u?watch=1&prefix=k', {}, other.key)
  await w.until(1)
  await other.put('/u/k1', { value: 1 })
  await other.put('/u/x', { value: 'outside the prefix' })
  await other.del('/u/k1')
  await w.until(3)
  w.close()
  // From history (since): its opening progress is not counted either, its two changes are.
  const again = await open('/u?watch=1&prefix=k&since=0', {}, other.key)
  const replayed = await again.until(3)
  again.close()
  t.same(
    replayed.map((e) => e.event),
    ['progress', 'put', 'delete'],
  )
  const today = (await other.get('/usage')).json.today
  t.equal(today.operations.watch, 2)
  t.equal(today.watchEvents, 4, 'put and delete events only: no progress event counts')
  const sum = Object.values(today.operations as Record<string, number>).reduce((a, b) => a + b, 0)
  t.equal(sum, today.requests)
})

t.test('a consumer too slow to keep up is closed with too_slow', async (t) => {
  const ns = await freshNamespace(api)
  const url = new URL(srv.baseUrl)
  // A client that sends the request and then reads nothing.
  const sock = net.connect(Number(url.port), url.hostname)
  t.teardown(() => sock.destroy())
  await new Promise((r) => sock.once('connect', r))
  sock.write(
    `GET ${url.pathname.replace(/\/$/, '')}/${ns}?watch=1 HTTP/1.1\r\nHost: x\r\nx-api-key: ${api.key}\r\naccept: text/event-stream\r\n\r\n`,
  )
  sock.pause()
  await new Promise((r) => setTimeout(r, 200))
  const big = 'x'.repeat(512 * 1024)
  for (let i = 0; i < 60; i++) await api.mustPut(ns, `k${i % 3}`, big)
  sock.resume()
  let text = ''
  await new Promise<void>((resolve) => {
    sock.on('data', (c) => {
      text += c.toString('latin1')
      if (text.includes('too_slow')) resolve()
    })
    sock.on('end', () => resolve())
    setTimeout(resolve, 15_000)
  })
  t.match(text, /event: error\ndata: \{"code":"too_slow"/, 'the last event says too_slow')
  // It resumes from the last event it did take.
  const ids = [...text.matchAll(/\nid: (\d+)\n/g)].map((m) => Number(m[1]))
  const from = ids.length ? Math.max(...ids) : 0
  const again = await open(`/${ns}?watch=1&since=${from}`)
  t.teardown(() => again.close())
  t.equal(again.status, 200)
  // 25 MiB of history: time enough for a loaded machine.
  const rest = await again.until(61 - from, 30_000)
  t.same(
    rest.slice(1).map((e) => Number(e.id)),
    Array.from({ length: 60 - from }, (_, i) => from + 1 + i),
    'and gets every change after it',
  )
  // Owing a resumed watch far more history than a live one may fall behind (1 MiB) is not
  // slowness: it stays open and passes on what comes next.
  // (A progress event may come first: a client slow to read 25 MiB leaves the server 15 s
  // without anything to send.)
  await api.mustPut(ns, 'after', 1)
  const live = () => again.events.some((e) => e.event === 'put' && e.id === '61')
  for (let i = 0; i < 1500 && !live() && !again.ended; i++)
    await new Promise((r) => setTimeout(r, 20))
  t.ok(live(), 'and stays open for live changes')
  t.notOk(
    again.events.some((e) => e.event === 'error'),
    'with no error',
  )
})

t.test('a WebSocket watch owed more history than a socket buffers gets all of it', async (t) => {
  const ns = await freshNamespace(api)
  const big = 'y'.repeat(512 * 1024)
  // 40 changes of 512 KiB: five times what a socket may hold unsent (4 MiB), and more than
  // the kernel's buffers take at once.
  for (let i = 0; i < 40; i++) await api.mustPut(ns, `k${i}`, big)
  const ws = new WebSocket(`${srv.baseUrl.replace(/^http/, 'ws')}/${ns}?watch=1&since=0`, {
    headers: { 'x-api-key': api.key },
  })
  t.teardown(() => ws.close())
  const got: any[] = []
  ws.on('message', (m) => {
    const e = JSON.parse(String(m))
    got.push({ type: e.type, version: e.version, code: e.code })
  })
  const waitFor = async (n: number) => {
    for (let i = 0; i < 1000 && got.length < n; i++) await new Promise((r) => setTimeout(r, 20))
  }
  await waitFor(41)
  await api.mustPut(ns, 'after', 1)
  await waitFor(42)
  t.same(got, [
    { type: 'progress', version: '0' },
    ...Array.from({ length: 40 }, (_, i) => ({ type: 'put', version: String(i + 1) })),
    { type: 'put', version: '41' },
  ])
})

t.test('the same watch over a WebSocket, with the key in the first message', async (t) => {
  const ns = await freshNamespace(api)
  await api.mustPut(ns, 'a', 1)
  const ws = new WebSocket(`${srv.baseUrl.replace(/^http/, 'ws')}/${ns}?watch=1&since=0`, {
    headers: { 'x-request-id': 'ws-upgrade-1' },
  })
  t.teardown(() => ws.close())
  const upgraded = new Promise<string | undefined>((r) =>
    ws.once('upgrade', (res) => r(res.headers['x-request-id'] as string | undefined)),
  )
  const got: any[] = []
  ws.on('message', (m) => got.push(JSON.parse(String(m))))
  await new Promise((r) => ws.once('open', r))
  t.equal(await upgraded, 'ws-upgrade-1', 'the 101 carries X-Request-Id')
  ws.send(JSON.stringify({ apiKey: api.key }))
  for (let i = 0; i < 100 && got.length < 2; i++) await new Promise((r) => setTimeout(r, 20))
  await api.mustPut(ns, 'b', 2)
  for (let i = 0; i < 100 && got.length < 3; i++) await new Promise((r) => setTimeout(r, 20))
  t.same(got, [
    { type: 'progress', version: '0' },
    { type: 'put', key: 'a', version: '1', value: 1 },
    { type: 'put', key: 'b', version: '2', value: 2 },
  ])
  const bad = new WebSocket(`${srv.baseUrl.replace(/^http/, 'ws')}/${ns}?watch=1`)
  const msgs: any[] = []
  bad.on('message', (m) => msgs.push(JSON.parse(String(m))))
  const closed = new Promise<number>((r) => bad.once('close', (code) => r(code)))
  await new Promise((r) => bad.once('open', r))
  bad.send(JSON.stringify({ apiKey: 'cairn_wrong' }))
  t.equal(await closed, 1008)
  t.match(msgs, [{ type: 'error', code: 'unauthorized' }])
})

t.test('a watch lasts only while its key works and its namespace exists', async (t) => {
  const made = await srv.createAccount()
  const owner = new Client(srv.baseUrl, made.apiKey)
  await owner.createNamespace('kept')
  await owner.createNamespace('gone')
  const extra = await srv.operator('key.create', { email: made.email, name: 'temp' })
  const sse = await watch(srv.baseUrl, '/kept?watch=1', extra.secret)
  t.teardown(() => sse.close())
  await sse.until(1)
  const ws = new WebSocket(`${srv.baseUrl.replace(/^http/, 'ws')}/kept?watch=1`, {
    headers: { 'x-api-key': extra.secret },
  })
  t.teardown(() => ws.terminate())
  const got: any[] = []
  ws.on('message', (m) => got.push(JSON.parse(String(m))))
  const wsClosed = new Promise<number>((r) => ws.once('close', (code) => r(code)))
  for (let i = 0; i < 100 && got.length < 1; i++) await new Promise((r) => setTimeout(r, 20))
  t.match(got, [{ type: 'progress' }], 'both watches open')

  await srv.operator('key.revoke', { email: made.email, id: extra.key.id })
  // On the embedded store a revocation is exact at once: the next change goes to nobody.
  await owner.put('/kept/after-revoke', { value: 'not for a revoked key' })
  await sse.end(5000)
  t.match(sse.events.at(-1), { event: 'error', data: { code: 'unauthorized' } })
  t.equal(await wsClosed, 1008)
  t.match(got.at(-1), { type: 'error', code: 'unauthorized' })
  if (!process.env.CAIRN_TEST_STORE) {
    const leaked = [...sse.events.map((e) => e.data?.key), ...got.map((m) => m.key)]
    t.notOk(leaked.includes('after-revoke'), 'no change after the revocation reached it')
  }

  const before = await watch(srv.baseUrl, '/gone?watch=1', made.apiKey)
  t.teardown(() => before.close())
  await before.until(1)
  t.equal((await owner.del('/namespaces/gone')).status, 200)
  await before.end(2000)
  t.match(before.events.at(-1), { event: 'error', data: { code: 'namespace_not_found' } })
  await owner.createNamespace('gone')
  await owner.put('/gone/new', { value: 1 })
  t.match(before.events.at(-1), { event: 'error' }, 'the new namespace is not sent to it')
})

t.test('a since past the namespace’s latest version: 410 history_expired', async (t) => {
  const ns = await freshNamespace(api)
  await api.mustPut(ns, 'a', 1)
  const ahead = await open(`/${ns}?watch=1&since=99`)
  t.equal(ahead.status, 410)
  t.equal(ahead.body.error.code, 'history_expired')
  t.match(ahead.body.error.message, /past the namespace's latest version, 1/)
  // Versions are digits compared as integers, however many: past every version there is,
  // where a JavaScript number is no longer exact, still past the latest.
  for (const [what, path, headers] of [
    ['since 2^53 + 1', `/${ns}?watch=1&since=9007199254740993`, undefined],
    ['Last-Event-ID of 24 digits', `/${ns}?watch=1`, { 'last-event-id': '9'.repeat(24) }],
  ] as const) {
    const far = await open(path, headers)
    t.equal(far.status, 410, what)
    t.equal(far.body.error.code, 'history_expired', what)
  }
  const level = await open(`/${ns}?watch=1&since=1`)
  t.teardown(() => level.close())
  t.equal(level.status, 200, 'its latest version itself is fine')
})
