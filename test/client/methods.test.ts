// Every client method against a real server.
import t from 'tap'
import { Cairn, NotFoundError } from '../../client/src/index.js'
import { account, nsName, server } from './helpers.js'

t.test('every method against a real server', async (t) => {
  // On the test clock: the expiry below is passed, not slept for (on Redis, waited for).
  const srv = await server(t, { testClock: true })
  const { kv, apiKey } = await account(srv)
  const ns = nsName('methods')

  const created = await kv.createNamespace(ns)
  t.equal(created.name, ns)
  t.ok(!Number.isNaN(Date.parse(created.createdAt)), 'createdAt is a date')

  t.test('put, get, delete', async (t) => {
    const first = await kv.put(ns, 'user:1', { name: 'Ada', tags: ['x'] })
    t.equal(first.created, true)
    t.match(first.version, /^\S+$/)
    const again = await kv.put(ns, 'user:1', { name: 'Ada L.' })
    t.equal(again.created, false)
    t.not(again.version, first.version, 'every write changes the version')

    const hit = await kv.get<{ name: string }>(ns, 'user:1')
    t.same(hit, { value: { name: 'Ada L.' }, version: again.version })
    t.equal(hit?.expiresAt, undefined, 'no TTL, no expiresAt')
    t.equal(await kv.get(ns, 'missing'), null)

    t.equal(await kv.delete(ns, 'user:1'), true)
    t.equal(await kv.delete(ns, 'user:1'), false)
    t.equal(await kv.get(ns, 'user:1'), null)
  })

  t.test('null and scalars are values; null is not missing', async (t) => {
    for (const v of [null, 0, -1.5, '', 'text', true, false, [], {}]) {
      await kv.put(ns, 'scalar', v)
      t.same((await kv.get(ns, 'scalar'))?.value, v, JSON.stringify(v))
    }
    t.not(await kv.get(ns, 'scalar'), null)
  })

  t.test('ttl and expiresAt', async (t) => {
    const before = Math.floor((await srv.now()) / 1000)
    await kv.put(ns, 'ttl', 1, { ttl: 3600 })
    const hit = await kv.get(ns, 'ttl')
    t.ok(hit?.expiresAt !== undefined, 'X-Expires-At is read')
    t.ok(hit!.expiresAt! >= before + 3599 && hit!.expiresAt! <= before + 3602, `${hit?.expiresAt}`)

    const at = before + 7200
    await kv.put(ns, 'at', 1, { expiresAt: at })
    t.equal((await kv.get(ns, 'at'))?.expiresAt, at)
    await kv.put(ns, 'at-date', 1, { expiresAt: new Date(at * 1000) })
    t.equal((await kv.get(ns, 'at-date'))?.expiresAt, at, 'a Date works too')

    await kv.put(ns, 'short', 'gone soon', { ttl: 1 })
    await srv.passTime(2100)
    t.equal(await kv.get(ns, 'short'), null, 'expired key reads as missing')
  })

  t.test('conditional writes', async (t) => {
    const a = await kv.put(ns, 'cond', 'a', { ifNoneMatch: '*' })
    t.equal(a.created, true)
    await t.rejects(kv.put(ns, 'cond', 'b', { ifNoneMatch: '*' }), {
      name: 'ConflictError',
      status: 412,
      code: 'precondition_failed',
    })
    const b = await kv.put(ns, 'cond', 'b', { ifMatch: a.version })
    t.equal(b.created, false)
    await t.rejects(kv.put(ns, 'cond', 'c', { ifMatch: a.version }), {
      code: 'precondition_failed',
    })
    await t.rejects(kv.delete(ns, 'cond', { ifMatch: a.version }), {
      name: 'ConflictError',
      status: 412,
    })
    t.equal((await kv.get(ns, 'cond'))?.value, 'b', 'failed conditions changed nothing')
    t.equal(
      await kv.delete(ns, 'cond', { ifMatch: `"${b.version}"` }),
      true,
      'a quoted ETag works too',
    )
    // ifMatch '*': any version, so only while the entry exists.
    await t.rejects(kv.put(ns, 'cond', 'd', { ifMatch: '*' }), { code: 'precondition_failed' })
    await kv.put(ns, 'cond', 'e')
    t.equal(
      (await kv.put(ns, 'cond', 'f', { ifMatch: '*' })).created,
      false,
      "'*' over any version",
    )
    t.same(await kv.get(ns, 'cond', { ifNoneMatch: '*' }), {
      notModified: true,
      version: (await kv.get(ns, 'cond'))!.version,
    })
    t.equal(await kv.delete(ns, 'cond', { ifMatch: '*' }), true, "a delete with '*'")
  })

  t.test('a prefix that is not valid Unicode is a BadRequestError, not a URIError', async (t) => {
    await t.rejects(kv.list(ns, { prefix: '\uD800' }), { name: 'BadRequestError', status: 400 })
  })

  t.test('conditional reads: ifNoneMatch', async (t) => {
    const w = await kv.put(ns, 'seen', { n: 1 })
    t.same(
      await kv.get(ns, 'seen', { ifNoneMatch: w.version }),
      { notModified: true, version: w.version },
      'the version held: 304, no value',
    )
    t.same(
      await kv.getRaw(ns, 'seen', { ifNoneMatch: `"${w.version}"` }),
      { notModified: true, version: w.version },
      'a quoted ETag works too, and getRaw answers the same',
    )
    const w2 = await kv.put(ns, 'seen', { n: 2 })
    t.same(
      await kv.get(ns, 'seen', { ifNoneMatch: w.version }),
      { value: { n: 2 }, version: w2.version },
      'a newer version: the entry',
    )
    t.equal(await kv.get(ns, 'unseen', { ifNoneMatch: w.version }), null, 'missing: null')
  })

  t.test('big integers and exact values', async (t) => {
    const text = '{"id":123456789012345678901234567890,"n":-9007199254740993,"small":42,"z":-0}'
    await kv.putRaw(ns, 'big', text)
    const raw = await kv.getRaw(ns, 'big')
    t.equal(raw?.raw, text, 'getRaw returns the stored text')

    const hit = await kv.get<any>(ns, 'big')
    t.equal(hit?.value.id, 123456789012345678901234567890n, 'bigint by default')
    t.equal(hit?.value.n, -9007199254740993n)
    t.equal(hit?.value.small, 42, 'safe integers stay numbers')
    t.ok(Object.is(hit?.value.z, -0))

    await kv.put(ns, 'big2', hit!.value)
    t.equal(
      (await kv.getRaw(ns, 'big2'))?.raw,
      text,
      'a bigint value writes back unchanged, -0 too',
    )

    const str = new Cairn(apiKey, { baseUrl: srv.baseUrl, bigints: 'string' })
    t.equal((await str.get<any>(ns, 'big'))?.value.id, '123456789012345678901234567890')
    const num = new Cairn(apiKey, { baseUrl: srv.baseUrl, bigints: 'number' })
    t.equal(
      (await num.get<any>(ns, 'big'))?.value.id,
      1.2345678901234568e29,
      'number mode is opt-in loss',
    )

    const proto = '{"__proto__":{"polluted":true},"2":"b","1":"a"}'
    await kv.putRaw(ns, 'proto', proto)
    const p = (await kv.get<any>(ns, 'proto'))?.value
    t.ok(Object.hasOwn(p, '__proto__'), '__proto__ is an own member')
    t.equal(({} as any).polluted, undefined, 'no prototype pollution')
    t.equal((await kv.getRaw(ns, 'proto'))?.raw, proto, 'member order survives in getRaw')
  })

  t.test('list and keys', async (t) => {
    const ns2 = nsName('list')
    await kv.createNamespace(ns2)
    for (const k of ['b', 'a', 'c/1', 'c/2', 'd']) await kv.put(ns2, k, k)
    const whole = await kv.list(ns2)
    t.same(whole.keys, ['a', 'b', 'c/1', 'c/2', 'd'], 'one page')
    t.equal(whole.cursor, undefined, 'no cursor')
    t.same((await kv.list(ns2, { prefix: 'c/' })).keys, ['c/1', 'c/2'])
    const p1 = await kv.list(ns2, { limit: 2 })
    t.same(p1.keys, ['a', 'b'])
    t.type(p1.cursor, 'string')
    const p2 = await kv.list(ns2, { limit: 2, cursor: p1.cursor })
    t.same(p2.keys, ['c/1', 'c/2'])
    const all: string[] = []
    for await (const k of kv.keys(ns2, { pageSize: 2 })) all.push(k)
    t.same(all, ['a', 'b', 'c/1', 'c/2', 'd'])
    const some: string[] = []
    for await (const k of kv.keys(ns2, { prefix: 'c', pageSize: 1 })) some.push(k)
    t.same(some, ['c/1', 'c/2'])
  })

  t.test('namespaces, usage, deleteNamespace', async (t) => {
    const list = await kv.namespaces()
    const mine = list.find((n) => n.name === ns)
    t.ok(mine, 'the namespace is listed')
    t.type(mine?.keys, 'number')
    t.type(mine?.bytes, 'number')

    const usage = await kv.usage()
    t.equal(usage.plan.id, 'free')
    t.match(usage.today.date, /^\d{4}-\d{2}-\d{2}$/)
    t.ok(usage.today.requests > 0)
    t.ok(usage.today.operations.put > 0)
    t.type(usage.today.watchEvents, 'number')
    t.type(usage.today.operations.transaction, 'number')
    const ops = usage.today.operations
    t.equal(
      ops.get +
        ops.put +
        ops.delete +
        ops.list +
        ops.namespace +
        ops.usage +
        ops.patch +
        ops.transaction +
        ops.deletePrefix +
        ops.watch,
      usage.today.requests,
      'the typed operations add up to requests',
    )
    t.equal(usage.days.length, 30)
    t.type(usage.storage.keys, 'number')

    const gone = nsName('gone')
    await kv.createNamespace(gone)
    await kv.put(gone, 'k', 1)
    t.equal(await kv.deleteNamespace(gone), true)
    t.equal(await kv.deleteNamespace(gone), false, 'a missing namespace deletes as false')
    await t.rejects(kv.get(gone, 'k'), NotFoundError)
    await t.rejects(
      kv.delete(gone, 'k'),
      { code: 'namespace_not_found' },
      'delete throws for a missing namespace',
    )
  })

  t.test('baseUrl from CAIRN_URL and API key from CAIRN_API_KEY', async (t) => {
    const saved = { url: process.env.CAIRN_URL, key: process.env.CAIRN_API_KEY }
    t.teardown(() => {
      restore('CAIRN_URL', saved.url)
      restore('CAIRN_API_KEY', saved.key)
    })
    process.env.CAIRN_URL = srv.url
    process.env.CAIRN_API_KEY = apiKey
    const fromEnv = new Cairn()
    t.equal(fromEnv.baseUrl, srv.baseUrl, 'a URL without a path gets /v1')
    t.same((await fromEnv.get(ns, 'scalar'))?.value, {})
    delete process.env.CAIRN_URL
    t.throws(() => new Cairn('k'), TypeError, 'no baseUrl anywhere is an error')
    delete process.env.CAIRN_API_KEY
    t.throws(
      () => new Cairn(undefined, { baseUrl: srv.baseUrl }),
      TypeError,
      'no API key anywhere is an error',
    )
  })
})

function restore(name: string, v: string | undefined) {
  if (v === undefined) delete process.env[name]
  else process.env[name] = v
}
