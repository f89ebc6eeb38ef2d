// Every error class, each provoked for real: by the server, by a gateway in front of it,
// or by the network.
import net from 'node:net'
import t from 'tap'
import {
  AuthError,
  BadRequestError,
  Cairn,
  CairnError,
  ConflictError,
  InvalidResponseError,
  NetworkError,
  NotFoundError,
  PayloadTooLargeError,
  QuotaExceededError,
  RateLimitError,
  ServerError,
} from '../../client/src/index.js'
import { account, cliKey, nsName, server } from './helpers.js'
import { startProxy } from './proxy.js'

type Tap = Pick<typeof t, 'ok' | 'equal' | 'match'>

t.test('errors are typed', async (t) => {
  const srv = await server(t)
  const { kv, email } = await account(srv)
  const ns = nsName('errors')
  await kv.createNamespace(ns)
  await kv.put(ns, 'k', 1)

  const check = async (
    t: Tap,
    p: Promise<unknown>,
    cls: typeof CairnError,
    status: number,
    code: string,
  ) => {
    const err = await p.then(
      () => undefined,
      (e: unknown) => e,
    )
    t.ok(
      err instanceof cls,
      `${code}: a ${cls.name} (got ${(err as Error)?.name}: ${(err as Error)?.message})`,
    )
    t.ok(err instanceof CairnError, `${code}: a CairnError`)
    const e = err as CairnError
    t.equal(e.status, status, `${code}: status`)
    t.equal(e.code, code)
    t.equal(e.name, cls.name)
    t.ok(e.message.length > 0, 'has a message')
    if (status > 0) t.match(e.requestId, /\S/, `${code}: requestId from X-Request-Id`)
    return e
  }

  t.test('401 and 403: AuthError', async (t) => {
    const bad = new Cairn('cairn_' + 'x'.repeat(32), { baseUrl: srv.baseUrl, retries: false })
    await check(t, bad.get(ns, 'k'), AuthError, 401, 'unauthorized')
    const readKey = await cliKey(srv, email, ['--permission', 'read', '--name', 'reader'])
    const reader = new Cairn(readKey, { baseUrl: srv.baseUrl })
    t.equal((await reader.get(ns, 'k'))?.value, 1, 'a read key reads')
    await check(t, reader.put(ns, 'k', 2), AuthError, 403, 'forbidden')
    await check(t, reader.createNamespace(nsName()), AuthError, 403, 'forbidden')
    t.end()
  })

  t.test('400: BadRequestError', async (t) => {
    await check(t, kv.put(ns, 'k', 1, { ttl: 0 }), BadRequestError, 400, 'invalid_ttl')
    await check(
      t,
      kv.put(ns, 'k', 1, { ttl: 10, expiresAt: 2e9 }),
      BadRequestError,
      400,
      'invalid_ttl',
    )
    await check(t, kv.list(ns, { limit: 0 }), BadRequestError, 400, 'invalid_limit')
    await check(
      t,
      kv.list(ns, { cursor: '!!not-a-cursor' }),
      BadRequestError,
      400,
      'invalid_cursor',
    )
    const e = await kv.put(ns, 'k', undefined).catch((e) => e)
    t.ok(
      e instanceof BadRequestError && e.code === 'missing_value',
      'undefined is refused before sending',
    )
  })

  t.test('400 before sending: values JSON would silently change', async (t) => {
    let sent = 0
    const { apiKey } = await account(srv)
    const counting = new Cairn(apiKey, {
      baseUrl: srv.baseUrl,
      fetch: (u, i) => {
        sent++
        return fetch(u, i)
      },
    })
    const cyclic: Record<string, unknown> = {}
    cyclic.self = cyclic
    for (const [what, value] of [
      ['NaN', Number.NaN],
      ['Infinity in an array', [1, Number.POSITIVE_INFINITY]],
      ['-Infinity in an object', { n: Number.NEGATIVE_INFINITY }],
      ['a Map', { m: new Map([['a', 1]]) }],
      ['a Set', new Set([1])],
      ['a cycle', cyclic],
      ['undefined in an array', [1, undefined]],
      ['a function in an array', [() => 1]],
      ['a symbol in an array', [Symbol('s')]],
      ['a function as a member', { f: () => 1 }],
    ] as const) {
      const err = await counting.put(ns, 'k', value).catch((e: unknown) => e)
      t.ok(err instanceof BadRequestError, `${what}: a BadRequestError`)
      t.match(err, { status: 400, code: 'invalid_json' }, what)
      t.equal((err as CairnError).requestId, undefined, `${what}: no request, no request id`)
      t.ok((err as CairnError).cause instanceof TypeError, `${what}: the cause is kept`)
    }
    t.equal(sent, 0, 'nothing reached the network')
    t.equal((await kv.get(ns, 'k'))?.value, 1, 'the stored value is untouched')
  })

  t.test('400 before sending: putRaw text that is not exactly one JSON value', async (t) => {
    let sent = 0
    const counting = new Cairn(await cliKey(srv, email, []), {
      baseUrl: srv.baseUrl,
      fetch: (u, i) => {
        sent++
        return fetch(u, i)
      },
    })
    for (const text of [
      '"a","ttl":1',
      '"a","value":"b"',
      '1 2',
      '{"a":1}}',
      '',
      '  ',
      '[1,]',
      "{'a':1}",
      '"a\ud800"',
      '"\udc00b"',
    ]) {
      const err = await counting.putRaw(ns, 'raw', text).catch((e: unknown) => e)
      t.match(err, { status: 400, code: 'invalid_json' }, JSON.stringify(text))
      t.ok(err instanceof BadRequestError, `${JSON.stringify(text)}: a BadRequestError`)
    }
    t.equal(sent, 0, 'nothing reached the network')
    t.equal(await kv.get(ns, 'raw'), null, 'nothing was stored')
    for (const [text, stored] of [
      ['12345678901234567890', '12345678901234567890'],
      [' {"a":[1,{"b":null}]} ', '{"a":[1,{"b":null}]}'],
      ['"quote \\" and backslash \\\\"', '"quote \\" and backslash \\\\"'],
    ]) {
      await counting.putRaw(ns, 'raw', text!)
      t.equal((await kv.getRaw(ns, 'raw'))?.raw, stored, `${text} stored exactly`)
    }
  })

  t.test('404: NotFoundError', async (t) => {
    const missing = nsName('missing')
    await check(t, kv.get(missing, 'k'), NotFoundError, 404, 'namespace_not_found')
    await check(t, kv.put(missing, 'k', 1), NotFoundError, 404, 'namespace_not_found')
    await check(t, kv.delete(missing, 'k'), NotFoundError, 404, 'namespace_not_found')
    await check(t, kv.list(missing), NotFoundError, 404, 'namespace_not_found')
  })

  t.test('409 and 412: ConflictError', async (t) => {
    await check(t, kv.createNamespace(ns), ConflictError, 409, 'namespace_exists')
    await check(
      t,
      kv.put(ns, 'k', 3, { ifNoneMatch: '*' }),
      ConflictError,
      412,
      'precondition_failed',
    )
    await check(
      t,
      kv.put(ns, 'nope', 3, { ifMatch: '1' }),
      ConflictError,
      412,
      'precondition_failed',
    )
  })

  t.test('413 and 403 quotas: PayloadTooLargeError, QuotaExceededError', async (t) => {
    const small = (await account(srv, { plan: 'small' })).kv
    const a = nsName('small')
    await small.createNamespace(a)
    await check(
      t,
      small.put(a, 'big', 'x'.repeat(2000)),
      PayloadTooLargeError,
      413,
      'value_too_large',
    )
    await small.createNamespace(nsName('small'))
    await check(
      t,
      small.createNamespace(nsName('small')),
      QuotaExceededError,
      403,
      'namespace_quota_exceeded',
    )
    let err: unknown
    for (let i = 0; i < 20 && !err; i++) {
      err = await small.put(a, `fill${i}`, 'y'.repeat(900)).then(
        () => undefined,
        (e) => e,
      )
    }
    t.ok(err instanceof QuotaExceededError, 'storage fills up')
    t.equal((err as CairnError).code, 'storage_quota_exceeded')
    t.equal((err as CairnError).status, 403)
    t.equal((await small.get(a, 'fill0'))?.value, 'y'.repeat(900), 'reads keep working')
  })

  t.test('429: RateLimitError', async (t) => {
    const retried: unknown[] = []
    const tracked = (
      await account(srv, { plan: 'daily', client: { retries: 3, onRetry: (e) => retried.push(e) } })
    ).kv
    // The plan allows 3 requests a day; use them up.
    for (let i = 0; i < 3; i++) await tracked.namespaces()
    const e = (await check(
      t,
      tracked.namespaces(),
      RateLimitError,
      429,
      'quota_exceeded',
    )) as RateLimitError
    t.ok(e.retryAfter !== undefined && e.retryAfter >= 1, `retryAfter ${e.retryAfter}`)
    t.equal(retried.length, 0, 'a used-up daily quota is not retried')
  })

  t.test('5xx: ServerError, from a gateway answering HTML', async (t) => {
    const proxy = await startProxy(srv.url)
    t.teardown(() => proxy.close())
    const { apiKey } = await account(srv)
    const viaProxy = new Cairn(apiKey, { baseUrl: `${proxy.url}/v1`, retries: false })
    proxy.failNext(1, 502)
    const e = await check(t, viaProxy.namespaces(), ServerError, 502, 'http_502')
    t.match(e.message, /502/)
    proxy.failNext(1, 500)
    await check(t, viaProxy.usage(), ServerError, 500, 'http_500')
    t.ok(Array.isArray(await viaProxy.namespaces()), 'the path through the gateway works')
  })

  t.test(
    'not our JSON: InvalidResponseError, from a gateway answering 200 with a page',
    async (t) => {
      const proxy = await startProxy(srv.url)
      t.teardown(() => proxy.close())
      const { apiKey } = await account(srv)
      const sent: string[] = []
      const viaProxy = new Cairn(apiKey, {
        baseUrl: `${proxy.url}/v1`,
        fetch: (u, i) => {
          sent.push(new Headers(i.headers).get('x-request-id') ?? '')
          return fetch(u, i)
        },
      })
      // A captive portal or a misrouted proxy answers 200 with its own HTML.
      proxy.failNext(1, 200)
      const e = await check(t, viaProxy.namespaces(), InvalidResponseError, 200, 'invalid_response')
      t.match(e.message, /not JSON/)
      t.equal(sent.length, 1, 'a 200 is not retried, whatever its body')
      t.equal(e.requestId, sent[0], 'no X-Request-Id came back: the id sent is quoted')
      proxy.failNext(1, 200)
      await check(t, viaProxy.list(nsName('gone')), InvalidResponseError, 200, 'invalid_response')
      proxy.failNext(1, 200)
      const page = await viaProxy.get(ns, 'k').catch((e: unknown) => e)
      t.ok(page instanceof InvalidResponseError, 'get: a body without "value" is refused too')
    },
  )

  t.test('no server: NetworkError', async (t) => {
    const port = await closedPort()
    const gone = new Cairn('k', { baseUrl: `http://127.0.0.1:${port}/v1`, retries: false })
    const e = await check(t, gone.get(ns, 'k'), NetworkError, 0, 'network_error')
    t.equal(e.requestId, undefined)
    t.ok(e.cause !== undefined, 'keeps the cause')
  })
})

/** A port nothing listens on: bind, note it, close. */
async function closedPort(): Promise<number> {
  const s = net.createServer()
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r))
  const port = (s.address() as net.AddressInfo).port
  await new Promise((r) => s.close(r))
  return port
}
