// Retries: after real 429s from a tight plan, after gateway errors, after network errors;
// and never blindly for conditional writes.
import t from 'tap'
import { Cairn, type RetryEvent, RateLimitError, ServerError } from '../../client/src/index.js'
import { account, nsName, server } from './helpers.js'
import { startProxy } from './proxy.js'

t.test('429 from a tight plan is retried after Retry-After', async (t) => {
  const srv = await server(t)
  const { kv: noRetry, apiKey } = await account(srv, { plan: 'slow', client: { retries: false } })
  const events: RetryEvent[] = []
  const kv = new Cairn(apiKey, {
    baseUrl: srv.baseUrl,
    retries: { limit: 4, baseDelayMs: 20 },
    onRetry: (e) => events.push(e),
  })

  /** Spends the bucket with the non-retrying client; returns its 429. */
  const burn = async (): Promise<RateLimitError> => {
    for (let i = 0; i < 20; i++) {
      const e = await noRetry.namespaces().then(
        () => undefined,
        (e) => e,
      )
      if (e) return e
    }
    throw new Error('the bucket never ran dry')
  }

  const first = await burn()
  t.ok(first instanceof RateLimitError, 'retries off: the 429 is thrown')
  t.equal(first.code, 'rate_limited')
  t.ok(first.retryAfter! >= 1, `Retry-After read: ${first.retryAfter}`)

  /** Runs `fn` right after emptying the bucket until it has needed at least one retry. */
  const afterBurn = async <T>(fn: () => Promise<T>): Promise<T> => {
    for (let round = 0; round < 3; round++) {
      events.length = 0
      await burn()
      const out = await fn()
      if (events.length > 0) return out
    }
    throw new Error('never met a 429')
  }

  const ns = nsName('slow')
  const made = await afterBurn(() => kv.createNamespace(ns))
  t.equal(made.name, ns, 'createNamespace retried after a 429 (nothing was applied)')
  t.ok(
    events.every((e) => e.error instanceof RateLimitError && e.delayMs >= 1000),
    'waited Retry-After',
  )

  const put = await afterBurn(() => kv.put(ns, 'c', 1, { ifNoneMatch: '*' }))
  t.equal(put.created, true, 'a conditional write is retried after a 429')
  const hit = await afterBurn(() => kv.get(ns, 'c'))
  t.equal(hit?.value, 1)

  await new Promise((r) => setTimeout(r, 3000))
  const usage = await kv.usage()
  t.ok(usage.today.rateLimited >= 4, `the server counted the 429s (${usage.today.rateLimited})`)
})

t.test('gateway errors and network errors', async (t) => {
  const srv = await server(t)
  const proxy = await startProxy(srv.url)
  t.teardown(() => proxy.close())
  const { apiKey, kv: direct } = await account(srv)
  const ns = nsName('gw')
  await direct.createNamespace(ns)
  const events: RetryEvent[] = []
  const kv = new Cairn(apiKey, {
    baseUrl: `${proxy.url}/v1`,
    retries: { limit: 3, baseDelayMs: 10, maxDelayMs: 50 },
    onRetry: (e) => events.push(e),
  })
  const attempts = async (fn: () => Promise<unknown>) => {
    proxy.seen.length = 0
    events.length = 0
    const result = await fn().then(
      (v) => ({ v }),
      (e) => ({ e }),
    )
    return { ...result, seen: proxy.seen.length }
  }

  for (const status of [502, 503, 504]) {
    proxy.failNext(2, status)
    const r = await attempts(() => kv.put(ns, `k${status}`, status))
    t.same(
      r,
      { v: { created: true, version: (r as any).v?.version }, seen: 3 },
      `unconditional PUT retried after ${status}`,
    )
    proxy.failNext(2, status)
    const g = await attempts(() => kv.get(ns, `k${status}`))
    t.equal((g as any).v?.value, status, `GET retried after ${status}`)
    t.equal(g.seen, 3)
  }

  proxy.failNext(1, 429, { 'retry-after': '1' })
  const limited = await attempts(() => kv.put(ns, 'k429', 429, { ifNoneMatch: '*' }))
  t.equal(
    (limited as any).v?.created,
    true,
    "a gateway's 429 is retried, for a conditional write too",
  )
  t.equal(limited.seen, 2)
  t.equal(events[0]?.error.code, 'http_429', 'the 429 came from the gateway, not the server')
  t.ok(events[0]!.delayMs >= 1000, "the gateway's Retry-After is honoured")

  proxy.failNext(2, 503)
  const d = await attempts(() => kv.delete(ns, 'k502'))
  t.same(d, { v: true, seen: 3 }, 'unconditional DELETE retried')

  proxy.failNext(1, 503, { 'retry-after': '7' })
  const c = await attempts(() => kv.put(ns, 'k503', 'x', { ifMatch: '1' }))
  t.ok((c as any).e instanceof ServerError, 'conditional PUT: the 503 is thrown')
  t.equal((c as any).e.retryAfter, 7, 'the thrown 503 carries its Retry-After')
  t.equal(c.seen, 1, 'conditional PUT is not retried after a 503')
  proxy.failNext(1, 502)
  const n = await attempts(() => kv.createNamespace(nsName('gw')))
  t.equal(n.seen, 1, 'createNamespace is not retried after a 502')
  proxy.failNext(1, 500)
  const f = await attempts(() => kv.get(ns, 'k503'))
  t.equal(f.seen, 1, 'a 500 is not retried')

  proxy.failNext(10, 503)
  const many = await attempts(() => kv.get(ns, 'k503'))
  t.ok((many as any).e instanceof ServerError)
  t.equal(many.seen, 4, 'gives up after the retry limit')
  t.same(
    events.map((e) => e.attempt),
    [1, 2, 3],
  )
  t.ok(
    events.every((e) => e.delayMs <= 50),
    'backoff capped by maxDelayMs',
  )

  proxy.failNext(1, 503, { 'retry-after': '1' })
  const ra = await attempts(() => kv.get(ns, 'k503'))
  t.equal(ra.seen, 2)
  t.ok(events[0]!.delayMs >= 1000, 'Retry-After on a 503 is honoured')

  const off = new Cairn(apiKey, { baseUrl: `${proxy.url}/v1`, retries: 0 })
  proxy.failNext(1, 503)
  const o = await attempts(() => off.get(ns, 'k503'))
  t.equal(o.seen, 1, 'retries: 0 turns retrying off')
  proxy.failNext(0, 503)

  await proxy.close()
  const netEvents: RetryEvent[] = []
  const dead = new Cairn(apiKey, {
    baseUrl: `${proxy.url}/v1`,
    retries: { limit: 2, baseDelayMs: 5 },
    onRetry: (e) => netEvents.push(e),
  })
  await t.rejects(dead.get(ns, 'x'), { name: 'NetworkError' })
  t.equal(netEvents.length, 2, 'network errors retried for reads')
  netEvents.length = 0
  await t.rejects(dead.put(ns, 'x', 1, { ifNoneMatch: '*' }), { name: 'NetworkError' })
  t.equal(netEvents.length, 0, 'but never for conditional writes')
})
