// Exports (contract, "Export and import"): the NDJSON format, prefixes and ranges, values
// byte-exact, usage per started 1,000 entries, the read key; a large export while writers
// change, create and delete keys equals the model's state at the header's version.
import fs from 'node:fs'
import http from 'node:http'
import t, { type Test } from 'tap'
import { Client, encodeKey } from '../contract/http.js'
import { cli } from '../contract/cli.js'
import { freshNamespace, plan, plansFile, setup } from '../contract/setup.js'
import { entryTexts, exportOf } from './export-helpers.js'

const onRedis = process.env.CAIRN_TEST_STORE !== undefined

t.test('the format', async (t) => {
  const { srv, api, email } = await setup(t)
  const ns = await freshNamespace(api)
  const raw = '{"big":12345678901234567890123,"d":1.50,"z":-0,"__proto__":{"x":"\\u00e9"}}'
  await api.put(`/${ns}/b`, `{"value":${raw}}`)
  await api.put(`/${ns}/a`, { value: [1, null], metadata: { m: 1 } })
  await api.mustPut(ns, 'c/1', 'three', { ttl: 3600 })
  const last = await api.mustPut(ns, 'c/2', null)
  const all = await exportOf(srv.baseUrl, api.key, `/${ns}?export=1`)
  t.equal(all.status, 200)
  t.equal(all.headers['content-type'], 'application/x-ndjson')
  const [head, ...rest] = all.lines
  t.match(head, { cairn: 'export', format: 1, namespace: ns, version: last })
  t.ok(!Number.isNaN(Date.parse(head.exportedAt)), 'exportedAt is a time')
  t.same(rest.at(-1), { end: true, entries: 4 })
  t.same(
    rest.slice(0, -1).map((e) => e.key),
    ['a', 'b', 'c/1', 'c/2'],
    'key order',
  )
  const texts = entryTexts(all.text)
  t.equal(texts[1], `{"key":"b","value":${raw},"version":"1"}`, 'a value goes byte for byte')
  t.same(rest[0], { key: 'a', value: [1, null], version: '2', metadata: { m: 1 } })
  t.equal(typeof rest[2].expiresAt, 'number', 'an expiry in unix seconds')
  t.same(rest[3], { key: 'c/2', value: null, version: '4' }, 'null is a value')

  const pre = await exportOf(srv.baseUrl, api.key, `/${ns}?export=1&prefix=c%2F`)
  t.same(
    pre.lines.slice(1).map((e) => e.key ?? e.entries),
    ['c/1', 'c/2', 2],
  )
  const range = await exportOf(srv.baseUrl, api.key, `/${ns}?export=1&start=b&end=c%2F2`)
  t.same(
    range.lines.slice(1).map((e) => e.key ?? e.entries),
    ['b', 'c/1', 2],
  )
  const none = await exportOf(srv.baseUrl, api.key, `/${ns}?export=1&prefix=zz`)
  t.same(none.lines.slice(1), [{ end: true, entries: 0 }], 'an empty export')

  const missing = await exportOf(srv.baseUrl, api.key, '/nosuch?export=1')
  t.equal(missing.status, 404)
  t.equal(JSON.parse(missing.text).error.code, 'namespace_not_found')

  const reader = (
    await cli(srv, ['key', 'create', '--email', email, '--name', 'ro', '--permission', 'read'])
  ).secret
  const r = await exportOf(srv.baseUrl, reader, `/${ns}?export=1`)
  t.equal(r.status, 200, 'a read key exports')
  t.equal(
    r.text,
    all.text.replace(/"exportedAt":"[^"]*"/, r.text.match(/"exportedAt":"[^"]*"/)![0]),
  )
  const other = (
    await cli(srv, [
      'key',
      'create',
      '--email',
      email,
      '--name',
      'other',
      '--namespaces',
      'elsewhere',
    ])
  ).secret
  const f = await exportOf(srv.baseUrl, other, `/${ns}?export=1`)
  t.equal(f.status, 403, 'a key limited to other namespaces may not')
})

t.test('keys JSON escapes or writes in several bytes go as JSON strings', async (t) => {
  const { srv, api } = await setup(t)
  const ns = await freshNamespace(api)
  const keys = ['back\\slash', 'plain', 'q"uote', '~tilde', '\u00e9t\u00e9', '\u2028', '\u{1F600}']
  const versions = new Map<string, string>()
  for (const [i, k] of keys.entries()) versions.set(k, await api.mustPut(ns, k, i))
  const all = await exportOf(srv.baseUrl, api.key, `/${ns}?export=1`)
  const want = [...keys]
    .sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)))
    .map(
      (k) =>
        `{"key":${JSON.stringify(k)},"value":${keys.indexOf(k)},"version":"${versions.get(k)}"}`,
    )
  t.same(entryTexts(all.text), want, 'each line as JSON.stringify writes its key')
  t.same(
    all.lines.slice(1, -1).map((e) => e.key),
    want.map((w) => JSON.parse(w).key),
    'and each key parses back to itself',
  )
})

t.test('usage: one request per started 1,000 entries', async (t) => {
  const { srv, api } = await setup(t)
  const ns = await freshNamespace(api)
  for (let i = 0; i < 2500; i += 500) {
    const ops = Array.from({ length: 500 }, (_, j) => ({
      op: 'put',
      key: `k${String(i + j).padStart(5, '0')}`,
      value: i + j,
    }))
    t.equal((await api.post(`/${ns}`, { ops })).status, 200)
  }
  const before = (await api.get('/usage')).json.today
  const got = await exportOf(srv.baseUrl, api.key, `/${ns}?export=1`)
  t.equal(got.lines.length, 2502)
  const small = await exportOf(srv.baseUrl, api.key, `/${ns}?export=1&prefix=k0000`)
  t.equal(small.lines.length, 12)
  const after = (await api.get('/usage')).json.today
  t.equal(after.operations.export - (before.operations.export ?? 0), 4, '3 + 1 requests')
  t.equal(after.requests - before.requests, 5, 'counted in requests too (and the usage call)')
})

t.test('usage: an export stops at the daily quota', async (t) => {
  const { srv } = await setup(t, {
    plans: plansFile(plan({ id: 'tight', requestsPerDay: 3003 })),
  })
  const acct = await srv.createAccount(undefined, { plan: 'tight' })
  const tight = new Client(srv.baseUrl, acct.apiKey)
  const ns = await freshNamespace(tight)
  for (let i = 0; i < 3000; i += 1000) {
    const ops = Array.from({ length: 1000 }, (_, j) => ({ op: 'put', key: `k${i + j}`, value: j }))
    t.equal((await tight.post(`/${ns}`, { ops })).status, 200)
  }
  // 3,001 requests so far: the export is the 3,002nd, its second 1,000 the 3,003rd, and its
  // third would pass the quota.
  const got = await exportOf(srv.baseUrl, acct.apiKey, `/${ns}?export=1`)
  t.equal(got.status, 200)
  t.equal(got.lines.length, 2001, 'the header and 2,000 entries')
  t.notOk(got.lines.at(-1).end, 'no end line: the download was cut short')
  const refused = await exportOf(srv.baseUrl, acct.apiKey, `/${ns}?export=1`)
  t.equal(refused.status, 429)
  t.equal(JSON.parse(refused.text).error.code, 'quota_exceeded')
})

/** A model of the namespace: every write's version, per key. */
type History = Map<string, { version: number; value: unknown }[]>

function stateAt(h: History, v: number): Map<string, unknown> {
  const out = new Map<string, unknown>()
  for (const [k, writes] of h) {
    let last: { version: number; value: unknown } | undefined
    for (const w of writes) if (w.version <= v && (!last || w.version > last.version)) last = w
    if (last && last.value !== undefined) out.set(k, last.value)
  }
  return out
}

/**
 * An export of N entries, paused after its first bytes while 8 writers change, create and
 * delete keys, equals the model's state at its header's version. `window: false`: the
 * namespace keeps no history (its plan's historySeconds is 0). `atStart`: the export asks
 * `at=` the version the namespace had once loaded: the present when the export opens, or
 * (`past`) a point one write behind it.
 */
async function exportWhileWriting(
  t: Test,
  o: { N: number; window: boolean; atStart?: 'present' | 'past' },
): Promise<void> {
  const { srv, api } = await setup(
    t,
    o.window
      ? {}
      : {
          plans: {
            plans: [plan({ id: 'free', name: 'Free', historySeconds: 0 })],
            default: 'free',
            upgradeUrl: null,
          },
        },
  )
  const ns = await freshNamespace(api)
  const N = o.N
  const key = (i: number) => `k/${String(i).padStart(6, '0')}`
  const h: History = new Map()
  const note = (k: string, version: string, value: unknown) => {
    const list = h.get(k) ?? []
    list.push({ version: Number(version), value })
    h.set(k, list)
  }
  for (let i = 0; i < N; i += 1000) {
    const ops = Array.from({ length: 1000 }, (_, j) => ({
      op: 'put',
      key: key(i + j),
      value: { n: i + j, pad: 'x'.repeat(40) },
    }))
    const res = await api.post(`/${ns}`, { ops })
    t.equal(res.status, 200)
    res.json.results.forEach((r: { version: string }, j: number) => {
      note(ops[j]!.key, r.version, ops[j]!.value)
    })
  }
  // The export's first bytes arrive, then it is not read while 8 writers go on.
  const body: Buffer[] = []
  let response!: http.IncomingMessage
  let paused!: () => void
  const started = new Promise<void>((r) => {
    paused = r
  })
  const loaded = (await api.get(`/${ns}?limit=1`)).json.version as string
  if (o.atStart === 'past') {
    // The point is past before the export opens: it is read at it, not as the present.
    const res = await api.put(`/${ns}/${encodeKey(key(0))}`, { value: 'after the point' })
    note(key(0), res.json.version, 'after the point')
  }
  const query = o.atStart ? `export=1&at=${loaded}` : 'export=1'
  const done = new Promise<string>((resolve, reject) => {
    const req = http.get(
      `${srv.baseUrl}/${ns}?${query}`,
      { headers: { 'x-api-key': api.key } },
      (res) => {
        response = res
        res.once('data', (c: Buffer) => {
          body.push(c)
          res.pause()
          paused()
          res.on('data', (more: Buffer) => body.push(more))
        })
        res.on('end', () => resolve(Buffer.concat(body).toString('utf8')))
        res.on('error', reject)
      },
    )
    req.on('error', reject)
  })
  await started
  let writes = 0
  const writer = async (w: number) => {
    for (let i = 0; i < (onRedis ? 60 : 150); i++) {
      const r = (w * 7919 + i * 104729) % N
      const k = i % 3 === 2 ? `k/${String(r).padStart(6, '0')}-new${w}` : key(r)
      if (i % 3 === 1) {
        const res = await api.post(`/${ns}`, { ops: [{ op: 'delete', key: k }] })
        t.equal(res.status, 200)
        if (res.json.results[0].deleted) note(k, res.json.version, undefined)
      } else {
        const value = { w, i }
        const res = await api.put(`/${ns}/${encodeKey(k)}`, { value })
        t.ok(res.status === 200 || res.status === 201)
        note(k, res.json.version, value)
      }
      writes++
    }
  }
  await Promise.all(Array.from({ length: 8 }, (_, w) => writer(w)))
  t.ok(writes > 0)
  // Read the rest now.
  response.resume()
  const text = await done
  const lines = text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l))
  const head = lines[0]
  const end = lines.at(-1)
  t.ok(end.end, 'the export was whole')
  const V = Number(head.version)
  if (o.atStart) t.equal(head.version, loaded, "the header's version is the point's")
  const want = stateAt(h, V)
  const got = new Map(lines.slice(1, -1).map((e: any) => [e.key, e.value]))
  t.equal(end.entries, got.size)
  t.equal(got.size, want.size, `as many entries as the model holds at version ${V}`)
  let wrong = 0
  for (const [k, v] of want) if (JSON.stringify(got.get(k)) !== JSON.stringify(v)) wrong++
  for (const k of got.keys()) if (!want.has(k)) wrong++
  t.equal(wrong, 0, 'every entry as it was at the header version')
  const latest = Math.max(...[...h.values()].flat().map((w) => w.version))
  t.ok(latest > V, `writes after the header version (${latest} > ${V}) are not in it`)
  const keys = lines.slice(1, -1).map((e: any) => e.key)
  t.same(keys, [...keys].sort(), 'key order')
}

t.test('an export while writers change, create and delete keys', (t) =>
  exportWhileWriting(t, { N: onRedis ? 20_000 : 100_000, window: true }),
)

t.test('the same in a namespace that keeps no history', (t) =>
  exportWhileWriting(t, { N: 20_000, window: false }),
)

t.test('an export at a past point, read while writers go on', (t) =>
  exportWhileWriting(t, { N: 20_000, window: true, atStart: 'past' }),
)

t.test('an export at the present of a namespace that keeps no history', (t) =>
  exportWhileWriting(t, { N: 20_000, window: false, atStart: 'present' }),
)

/** The server process's resident memory, in bytes (Linux). */
function rss(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8')
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024
}

t.test('a reader that stops reading holds the server memory flat', async (t) => {
  if (!fs.existsSync('/proc/self/status')) return t.skip('needs /proc to read memory')
  const { srv, api } = await setup(t)
  const ns = await freshNamespace(api)
  const value = 'v'.repeat(64 * 1024)
  const COUNT = 1024
  for (let i = 0; i < COUNT; i += 16) {
    const ops = Array.from({ length: 16 }, (_, j) => ({ op: 'put', key: `k${i + j}`, value }))
    // A 503 on Redis is a replica slow to confirm under load: the puts may be sent again.
    let status = 0
    for (let tries = 0; tries < 5 && status !== 200; tries++)
      status = (await api.post(`/${ns}`, { ops })).status
    t.equal(status, 200)
  }
  const pid = srv.proc!.pid!
  const before = rss(pid)
  let got = 0
  let response!: http.IncomingMessage
  const first = new Promise<void>((resolve, reject) => {
    http
      .get(`${srv.baseUrl}/${ns}?export=1`, { headers: { 'x-api-key': api.key } }, (res) => {
        response = res
        res.once('data', (c: Buffer) => {
          got += c.length
          res.pause()
          resolve()
        })
      })
      .on('error', reject)
  })
  await first
  // The server goes on with other requests meanwhile, which is when a stream without
  // backpressure would read the whole namespace into memory.
  for (let i = 0; i < 20; i++) {
    t.equal((await api.get(`/${ns}/k${i}`)).status, 200)
    await new Promise((r) => setTimeout(r, 100))
  }
  const held = rss(pid)
  const namespaceBytes = COUNT * value.length
  t.ok(
    held - before < namespaceBytes / 4,
    `the server grew by ${Math.round((held - before) / 1048576)} MiB while a 64 MiB export waited`,
  )
  const rest = new Promise<void>((resolve) => {
    response.on('data', (c: Buffer) => {
      got += c.length
    })
    response.on('end', () => resolve())
  })
  response.resume()
  await rest
  t.ok(got > namespaceBytes, 'then the whole export came')
})
