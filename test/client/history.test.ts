// The client's reads of the past, a key's versions and restores against a real server: points
// as versions, Dates and RFC 3339 text; typed results; the server's refusals as the client's
// error classes.
import t from 'tap'
import {
  AuthError,
  BadRequestError,
  Cairn,
  HistoryExpiredError,
  NotFoundError,
} from '../../client/src/index.js'
import { account, cliKey, nsName, server } from './helpers.js'

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

t.test('getAt, history, versions, restore and an export at a point', async (t) => {
  const srv = await server(t)
  const { kv, email } = await account(srv)
  const ns = nsName('hist')
  await kv.createNamespace(ns)
  const v1 = (await kv.put(ns, 'k', { n: 1, big: 12345678901234567890n })).version
  const v2 = (await kv.put(ns, 'k', 'two', { metadata: { tag: 'x' }, ttl: 3600 })).version
  await kv.put(ns, 'p/a', 'a')
  await sleep(5)
  const then = new Date()
  await sleep(5)
  const point = (await kv.count(ns)).version
  await kv.delete(ns, 'k')
  await kv.put(ns, 'p/a', 'changed')
  await kv.put(ns, 'p/b', 'created since')

  const first = await kv.getAt<{ n: number; big: bigint }>(ns, 'k', v1)
  t.same(first, { value: { n: 1, big: 12345678901234567890n }, version: v1 }, 'a version as text')
  t.equal((await kv.getAt(ns, 'k', Number(v1)))?.version, v1, 'a version as a number')
  t.equal((await kv.getAt(ns, 'k', BigInt(v2)))?.value, 'two', 'a version as a bigint')
  const byDate = await kv.getAt(ns, 'k', then, { metadata: true })
  t.equal(byDate?.value, 'two', 'a Date')
  t.same(byDate?.metadata, { tag: 'x' }, 'its metadata then')
  t.equal(typeof byDate?.expiresAt, 'number', 'its expiry then')
  t.equal((await kv.getAt(ns, 'k', then.toISOString()))?.version, v2, 'RFC 3339 text')
  t.equal(await kv.getAt(ns, 'k', (await kv.count(ns)).version), null, 'deleted: null')
  t.equal(await kv.getAt(ns, 'never', point), null, 'never written: null')

  const page = await kv.history(ns, 'k')
  t.same(
    page.versions.map((v) => [v.deleted === true, v.value]),
    [
      [true, undefined],
      [false, 'two'],
      [false, { n: 1, big: 12345678901234567890n }],
    ],
    'newest first, the delete included',
  )
  t.same(page.versions[1]!.metadata, { tag: 'x' })
  for (const v of page.versions) t.ok(!Number.isNaN(Date.parse(v.at)), 'at is a time')
  t.notOk(page.cursor, 'one page')
  const one = await kv.history(ns, 'k', { limit: 1 })
  t.equal(one.versions.length, 1)
  t.type(one.cursor, 'string', 'a cursor to the older ones')
  const next = await kv.history(ns, 'k', { limit: 1, cursor: one.cursor })
  t.equal(next.versions[0]!.version, v2)
  const walked: string[] = []
  for await (const v of kv.versions(ns, 'k', { pageSize: 1 })) walked.push(v.version)
  t.same(
    walked,
    page.versions.map((v) => v.version),
    'versions walks every page',
  )

  const exported = []
  for await (const e of kv.exportNamespace(ns, { at: point })) exported.push([e.key, e.value])
  t.same(
    exported,
    [
      ['k', 'two'],
      ['p/a', 'a'],
    ],
    'an export at a point',
  )
  const reader = (await kv.exportStream(ns, { at: then })).getReader()
  const head = await reader.read()
  await reader.cancel()
  t.match(
    Buffer.from(head.value!).toString(),
    `"version":"${point}"`,
    "a Date: the header's version",
  )

  const r = await kv.restore(ns, { at: point, prefix: 'p/' })
  t.equal(r.restored, 2, 'p/a back, p/b gone')
  t.type(r.version, 'string')
  t.same(await kv.restore(ns, { at: point, prefix: 'p/' }), { restored: 0, version: r.version })
  t.equal(await kv.get(ns, 'k'), null, 'outside the prefix nothing moved')
  const ranged = await kv.restore(ns, { at: point, start: 'a', end: 'p' })
  t.equal(ranged.restored, 1, 'a range: k comes back')
  t.equal((await kv.get(ns, 'k'))?.value, 'two')
  const undo = await kv.restore(ns, { at: r.version })
  t.equal(undo.restored, 1, 'undone to the version before: k goes again')
  t.equal(await kv.get(ns, 'k'), null)

  const expired = await kv.getAt(ns, 'k', new Date(0)).catch((e) => e)
  t.ok(expired instanceof HistoryExpiredError, 'a point older than the history')
  t.equal(expired.code, 'history_expired')
  t.equal(expired.status, 410)
  await t.rejects(kv.restore(ns, { at: '1970-01-01T00:00:00Z' }), HistoryExpiredError)
  await t.rejects(kv.exportNamespace(ns, { at: new Date(0) }).next(), HistoryExpiredError)
  const future = await kv.getAt(ns, 'k', new Date(Date.now() + 3_600_000)).catch((e) => e)
  t.ok(future instanceof BadRequestError, 'a time in the future')
  t.equal(future.code, 'invalid_point')
  await t.rejects(kv.history(ns, 'k', { limit: 0 }), { code: 'invalid_limit' })
  await t.rejects(kv.restore(ns, { at: point, start: 'z', end: 'a' }), { code: 'invalid_range' })
  await t.rejects(kv.getAt(nsName('none'), 'k', point), NotFoundError)
  // Refused before sending: the server would refuse them too.
  for (const bad of [-1, 1.5, new Date(Number.NaN), ''] as const)
    await t.rejects(kv.getAt(ns, 'k', bad), { code: 'invalid_point' }, `point ${String(bad)}`)
  const ro = new Cairn(await cliKey(srv, email, ['--name', 'ro', '--permission', 'read']), {
    baseUrl: srv.baseUrl,
    retries: false,
  })
  t.equal((await ro.getAt(ns, 'p/a', point))?.value, 'a', 'a read key reads the past')
  await t.rejects(ro.restore(ns, { at: point }), AuthError, 'restore needs read-write')
})
