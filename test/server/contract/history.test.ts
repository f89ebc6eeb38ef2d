// History and restore (the contract's "History and restore"), against a real server: reads at
// a point equal what was read then, a key's versions, listings at a point whose cursor keeps
// the point, historyFrom and historyBytes, restores (undone, and sent twice) and every error
// code. backends.test.ts and history-redis.test.ts run this file again on Redis Cluster,
// where every assertion holds the same.
import t from 'tap'
import { Client, sleep } from './http.js'
import { cli } from './cli.js'
import { freshNamespace, setup } from './setup.js'
import { exportOf } from '../portable/export-helpers.js'

const { srv, api, email } = await setup(t)

/** The namespace as a listing with everything sees it now (or at a point). */
async function state(ns: string, at?: string): Promise<any[]> {
  const entries: any[] = []
  let cursor: string | undefined
  do {
    const q = new URLSearchParams({ include: 'values,metadata', limit: '2' })
    if (at !== undefined && cursor === undefined) q.set('at', at)
    if (cursor) q.set('cursor', cursor)
    const res = await api.get(`/${ns}?${q}`)
    if (res.status !== 200) throw new Error(`list ${ns}: ${res.status} ${res.text}`)
    entries.push(...res.json.entries)
    cursor = res.json.cursor
  } while (cursor)
  return entries
}

async function current(ns: string): Promise<string> {
  return (await api.get(`/${ns}?limit=1`)).json.version
}

/** What each key read as, with its ETag and metadata. */
async function reads(ns: string, keys: string[], at?: string) {
  const out: Record<string, unknown> = {}
  for (const k of keys) {
    const q = at === undefined ? '?metadata=1' : `?metadata=1&at=${encodeURIComponent(at)}`
    const r = await api.get(`/${ns}/${k}${q}`)
    out[k] = r.status === 200 ? { body: r.json, etag: r.headers.etag } : r.json?.error?.code
  }
  return out
}

const KEYS = ['a', 'b', 'c', 'd']

t.test('reads and listings at a point equal what was read then', async (t) => {
  const ns = await freshNamespace(api, 'hist')
  const seen: { version: string; time: string; reads: unknown; list: any[] }[] = []
  const step = async (write: () => Promise<unknown>) => {
    await write()
    const version = await current(ns)
    const r = await reads(ns, KEYS)
    const list = await state(ns)
    await sleep(3)
    const time = new Date().toISOString()
    await sleep(3)
    seen.push({ version, time, reads: r, list })
  }
  await step(() => api.mustPut(ns, 'a', 1))
  await step(() => api.mustPut(ns, 'b', { two: 2 }, { metadata: { tag: 'x' } }))
  await step(() => api.mustPut(ns, 'a', 'three', { ttl: 3600 }))
  await step(() => api.del(`/${ns}/b`))
  await step(() => api.mustPut(ns, 'c', [4]))
  await step(() => api.mustPut(ns, 'd', null, { metadata: { m: 1 } }))
  const last = seen[seen.length - 1]!
  for (const s of seen) {
    t.same(await reads(ns, KEYS, s.version), s.reads, `GET at version ${s.version}`)
    t.same(await state(ns, s.version), s.list, `listing at version ${s.version}`)
  }
  for (const s of seen) {
    t.same(await reads(ns, KEYS, s.time), s.reads, `GET at ${s.time}`)
    t.same(await state(ns, s.time), s.list, `listing at ${s.time}`)
  }
  const missing = await api.get(`/${ns}/zz?at=${last.version}`)
  t.equal(missing.status, 404)
  t.equal(missing.json.error.code, 'key_not_found', 'a key that did not exist then')
  const before = await api.get(`/${ns}/c?at=${seen[0]!.version}`)
  t.equal(before.json.error.code, 'key_not_found', 'a key created later did not exist then')
})

/** An export's entry lines as a listing with everything gives them. */
const asListed = (lines: any[]) =>
  lines.slice(1, -1).map(({ key, value, version, expiresAt, metadata }) => {
    const e: any = { key, version }
    if (expiresAt !== undefined) e.expiresAt = expiresAt
    e.value = value
    e.metadata = metadata ?? null
    return e
  })

t.test('an export at a point is the namespace as it was then', async (t) => {
  const ns = await freshNamespace(api, 'hexp')
  await api.mustPut(ns, 'p/a', 1, { metadata: { m: 1 } })
  await api.mustPut(ns, 'p/b', 2, { ttl: 3600 })
  await api.mustPut(ns, 'q/c', 3)
  const point = await current(ns)
  const atPoint = await state(ns)
  await sleep(3)
  const time = new Date().toISOString()
  await sleep(3)
  const exp = (q: string) => exportOf(srv.baseUrl, api.key, `/${ns}?export=1&${q}`)
  const now = await exp(`at=${point}`)
  t.equal(now.status, 200)
  t.equal(now.lines[0].version, point, "the header's version is the point's")
  t.same(asListed(now.lines), atPoint, 'the present point: every entry')
  t.same(now.lines.at(-1), { end: true, entries: 3 })
  await api.mustPut(ns, 'p/a', 'changed')
  await api.del(`/${ns}/p/b`)
  await api.mustPut(ns, 'p/new', 'created since')
  const then = await exp(`at=${point}`)
  t.equal(then.lines[0].version, point)
  t.same(asListed(then.lines), atPoint, 'a past version: the entries as they were')
  const byTime = await exp(`at=${encodeURIComponent(time)}`)
  t.equal(byTime.lines[0].version, point, "a time: the header's version is the one then")
  t.same(asListed(byTime.lines), atPoint, 'a past time: the entries as they were')
  const prefixed = await exp(`at=${point}&prefix=p/`)
  t.same(
    asListed(prefixed.lines),
    atPoint.filter((e) => e.key.startsWith('p/')),
    'with a prefix',
  )
  const ranged = await exp(`at=${point}&start=p/b&end=q/d`)
  t.same(
    ranged.lines.slice(1, -1).map((e: any) => e.key),
    ['p/b', 'q/c'],
    'with a range: p/b, deleted since, is in it',
  )
  t.same(ranged.lines.at(-1), { end: true, entries: 2 })
})

t.test('a listing cursor carries its point', async (t) => {
  const ns = await freshNamespace(api, 'hcur')
  for (const k of ['k1', 'k2', 'k3']) await api.mustPut(ns, k, k)
  const point = await current(ns)
  const first = await api.get(`/${ns}?at=${point}&limit=1`)
  t.equal(first.status, 200)
  t.same(first.json.keys, ['k1'])
  t.equal(first.json.version, point, "the page's version is the point's")
  await api.del(`/${ns}/k2`)
  await api.mustPut(ns, 'k15', 'new')
  const keys = [...first.json.keys]
  let cursor = first.json.cursor
  while (cursor) {
    const page = await api.get(`/${ns}?cursor=${cursor}&limit=1`)
    t.equal(page.json.version, point)
    keys.push(...page.json.keys)
    cursor = page.json.cursor
  }
  t.same(keys, ['k1', 'k2', 'k3'], 'the walk goes on at the point, not the present')
  const now = await api.get(`/${ns}?limit=1`)
  const mixed = await api.get(`/${ns}?cursor=${now.json.cursor}&at=${point}`)
  t.equal(mixed.json.error.code, 'invalid_cursor', "a present listing's cursor with at=")
  const other = await api.get(`/${ns}?cursor=${first.json.cursor}&at=1`)
  t.equal(other.json.error.code, 'invalid_cursor', 'a cursor with another version')
})

t.test("a key's versions, newest first, paged", async (t) => {
  const ns = await freshNamespace(api, 'hver')
  const v1 = await api.mustPut(ns, 'k', 1)
  const v2 = await api.mustPut(ns, 'k', 2, { metadata: { n: 2 } })
  await api.del(`/${ns}/k`)
  const v3 = await current(ns)
  const v4 = await api.mustPut(ns, 'k', 4, { ttl: 600 })
  const all = await api.get(`/${ns}/k?history=1`)
  t.equal(all.status, 200)
  for (const v of all.json.versions) t.ok(!Number.isNaN(Date.parse(v.at)), 'at is a time')
  const shape = all.json.versions.map((v: any) => {
    const { at: _at, expiresAt, ...rest } = v
    return expiresAt === undefined ? rest : { ...rest, expiresAt: typeof expiresAt }
  })
  const newest = { version: v4, value: 4, expiresAt: 'number' }
  t.same(
    shape,
    [
      newest,
      { version: v3, deleted: true },
      { version: v2, value: 2, metadata: { n: 2 } },
      { version: v1, value: 1 },
    ],
    'every version',
  )
  t.notOk(all.json.cursor, 'no cursor on the last page')
  const got: string[] = []
  let cursor: string | undefined
  do {
    const page = await api.get(`/${ns}/k?history=1&limit=1${cursor ? `&cursor=${cursor}` : ''}`)
    t.equal(page.json.versions.length, 1)
    got.push(page.json.versions[0].version)
    cursor = page.json.cursor
  } while (cursor)
  t.same(got, [v4, v3, v2, v1], 'pages of one')
  t.equal((await api.get(`/${ns}/k?history=1&limit=0`)).json.error.code, 'invalid_limit')
  t.equal((await api.get(`/${ns}/k?history=1&cursor=nope!`)).json.error.code, 'invalid_cursor')
  t.same((await api.get(`/${ns}/never?history=1`)).json, { versions: [] })
})

t.test('points that are refused', async (t) => {
  const ns = await freshNamespace(api, 'hbad')
  await api.mustPut(ns, 'k', 1)
  const cur = Number(await current(ns))
  const future = new Date(Date.now() + 3_600_000).toISOString()
  for (const [at, code, status] of [
    ['yesterday', 'invalid_point', 400],
    ['2026-13-01T00:00:00Z', 'invalid_point', 400],
    ['2026-02-30T00:00:00Z', 'invalid_point', 400],
    ['-1', 'invalid_point', 400],
    [String(cur + 5), 'invalid_point', 400],
    [future, 'invalid_point', 400],
    ['1970-01-01T00:00:00Z', 'history_expired', 410],
  ] as const) {
    const q = encodeURIComponent(at)
    for (const path of [`/${ns}/k?at=${q}`, `/${ns}?at=${q}`, `/${ns}?export=1&at=${q}`]) {
      const r = await api.get(path)
      t.equal(r.status, status, `${path}: ${status}`)
      t.equal(r.json.error.code, code)
    }
    const r = await api.post(`/${ns}?restore=1`, { at })
    t.equal(r.json.error.code, code, `restore at ${at}: ${code}`)
  }
  const none = await api.post(`/${ns}?restore=1`, {})
  t.equal(none.json.error.code, 'invalid_point', 'a restore without "at"')
  const gone = await api.get(`/nosuch/k?at=${cur}`)
  t.equal(gone.json.error.code, 'namespace_not_found')
  const ro = new Client(
    srv.baseUrl,
    (await cli(srv, ['key', 'create', '--email', email, '--name', 'ro', '--permission', 'read']))
      .secret,
  )
  t.equal((await ro.get(`/${ns}/k?at=${cur}`)).status, 200, 'a read key reads at a point')
  const refused = await ro.post(`/${ns}?restore=1`, { at: String(cur) })
  t.equal(refused.status, 403, 'restore needs a read-write key')
  t.equal(refused.json.error.code, 'forbidden')
})

t.test('historyFrom and historyBytes', async (t) => {
  const ns = await freshNamespace(api, 'hfrom')
  const made = Date.now()
  for (let i = 0; i < 5; i++) await api.mustPut(ns, 'k', 'x'.repeat(100))
  const listed = (await api.get('/namespaces')).json.namespaces.find((n: any) => n.name === ns)
  const from = Date.parse(listed.historyFrom)
  t.ok(listed.historyFrom.endsWith('Z') && !Number.isNaN(from), 'historyFrom is ISO 8601')
  t.ok(from <= made, 'the history reaches back to the creation')
  const usage = (await api.get('/usage')).json.namespaces.find((n: any) => n.name === ns)
  t.ok(usage.historyBytes >= 400, `superseded versions are counted (${usage.historyBytes})`)
})

t.test('restore, undo, and a restore sent twice', async (t) => {
  const ns = await freshNamespace(api, 'hrest')
  await api.mustPut(ns, 'p/a', 1)
  await api.mustPut(ns, 'p/b', 2, { metadata: { keep: true } })
  await api.mustPut(ns, 'p/c', 3, { ttl: 3600 })
  await api.mustPut(ns, 'p/same', 'same')
  await api.mustPut(ns, 'q/out', 'outside')
  const point = await current(ns)
  const atPoint = await state(ns)
  await api.mustPut(ns, 'p/a', 'changed', { metadata: { new: 1 } })
  await api.del(`/${ns}/p/b`)
  await api.mustPut(ns, 'p/c', 3)
  await api.mustPut(ns, 'p/new', 'created since')
  await api.mustPut(ns, 'q/out', 'changed outside')
  const before = await state(ns)
  const beforeVersion = await current(ns)
  const r = await api.post(`/${ns}?restore=1`, { at: point, prefix: 'p/' })
  t.equal(r.status, 200)
  t.equal(r.json.restored, 4, 'a, b, c and new are written; same is not')
  t.ok(Number(r.json.version) > Number(beforeVersion), 'as new writes')
  const after = await state(ns)
  const strip = (l: any[], prefix: string) =>
    l
      .filter((e) => e.key.startsWith(prefix))
      .map(({ version: _v, expiresAt, ...e }) => ({ ...e, expires: expiresAt !== undefined }))
  t.same(strip(after, 'p/'), strip(atPoint, 'p/'), 'the prefix is as it was at the point')
  t.same(
    after.find((e) => e.key === 'p/c').expiresAt,
    atPoint.find((e) => e.key === 'p/c').expiresAt,
    'the expiry comes back',
  )
  t.same(strip(after, 'q/'), strip(before, 'q/'), 'outside the prefix nothing moved')
  t.equal(
    after.find((e) => e.key === 'p/same').version,
    atPoint.find((e) => e.key === 'p/same').version,
    'a key already as it was is not written',
  )
  const again = await api.post(`/${ns}?restore=1`, { at: point, prefix: 'p/' })
  t.same(again.json, { restored: 0, version: r.json.version }, 'sent twice: nothing more')
  t.same(await state(ns), after, 'the same state')
  const undo = await api.post(`/${ns}?restore=1`, { at: beforeVersion })
  t.equal(undo.json.restored, 4, 'the undo writes the same keys back')
  t.same(strip(await state(ns), ''), strip(before, ''), 'undo gives back the state before')
  const atPresent = await api.post(`/${ns}?restore=1`, { at: undo.json.version })
  t.same(atPresent.json, { restored: 0, version: undo.json.version }, 'the present restores 0')
})

t.test('a restore of a range', async (t) => {
  const ns = await freshNamespace(api, 'hrange')
  for (const k of ['a', 'b', 'c', 'd']) await api.mustPut(ns, k, k)
  const point = await current(ns)
  const bad = await api.post(`/${ns}?restore=1`, { at: point, start: 'c', end: 'b' })
  t.equal(bad.status, 400)
  t.equal(bad.json.error.code, 'invalid_range', 'start after end')
  const outside = await api.post(`/${ns}?restore=1`, { at: point, prefix: 'x', start: 'a' })
  t.equal(outside.json.error.code, 'invalid_range', 'a bound outside the prefix')
  const notText = await api.post(`/${ns}?restore=1`, { at: point, start: 1 })
  t.equal(notText.json.error.code, 'invalid_request', 'a bound is a string')
  for (const k of ['a', 'b', 'c', 'd']) await api.mustPut(ns, k, `${k} changed`)
  await api.mustPut(ns, 'bb', 'new')
  const r = await api.post(`/${ns}?restore=1`, { at: point, start: 'b', end: 'd' })
  t.equal(r.status, 200)
  t.equal(r.json.restored, 3, 'b, bb and c: start inclusive, end exclusive')
  const values = Object.fromEntries((await state(ns)).map((e) => [e.key, e.value]))
  t.same(values, { a: 'a changed', b: 'b', c: 'c', d: 'd changed' })
})

t.test('a restore is counted as restore, one per started 1,000 keys', async (t) => {
  const ns = await freshNamespace(api, 'hcount')
  const ops = Array.from({ length: 1001 }, (_, i) => ({ op: 'put', key: `k${i}`, value: i }))
  const before = await current(ns)
  t.equal((await api.post(`/${ns}`, { ops: ops.slice(0, 1000) })).status, 200)
  t.equal((await api.post(`/${ns}`, { ops: ops.slice(1000) })).status, 200)
  const counted = async () =>
    (await api.get('/usage')).json.namespaces.find((n: any) => n.name === ns).today.operations
      .restore as number
  const was = await counted()
  const r = await api.post(`/${ns}?restore=1`, { at: before })
  t.equal(r.json.restored, 1001)
  let now = await counted()
  for (let i = 0; i < 50 && now === was; i++) {
    await sleep(100)
    now = await counted()
  }
  t.equal(now - was, 2, '1,001 keys count as 2')
  t.same(await state(ns), [], 'every key made since is gone')
})
