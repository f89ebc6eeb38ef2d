// The account token bucket on Redis, taken in leases (server/store/cluster/leased-bucket.ts):
// two stores on one real Redis Cluster stand for two front ends. A busy account costs a
// script call per lease, not per request; every front end together never admits more than
// the bucket holds; what a front end leased and did not spend goes back.
import { Cluster } from 'ioredis'
import t from 'tap'
import { LEASE_MS } from '../../server/store/cluster/leased-bucket.js'
import { BUCKET } from '../../server/store/cluster/record-scripts.js'
import type { Bucket, Store } from '../../server/store/types.js'
import { clusterFor } from '../helpers/redis-cluster.js'
import { twoStores } from '../helpers/two-stores.js'

const cluster = await clusterFor(t)
if (cluster) {
  const [a, b] = await twoStores(t, cluster)
  const probe = new Cluster([{ host: '127.0.0.1', port: cluster.nodes[0]!.port }])
  t.teardown(() => probe.quit())

  const bucket = (): Bucket => ({ ok: false, limit: 0, remaining: 0, reset: 0, retryAfter: 0 })
  const take = async (s: Store, id: string, rate: number, burst: number, cost = 1) =>
    ({ ...(await s.limiter.take(id, rate, burst, Date.now(), bucket(), cost)) }) as Bucket
  /** Script calls every master has run so far. */
  const scriptCalls = async () => {
    let n = 0
    for (const m of await cluster.masters()) {
      const info = String(
        await probe
          .nodes('master')
          .find((x) => x.options.port === m.port)!
          .info('commandstats'),
      )
      n += Number(/cmdstat_evalsha:calls=(\d+)/.exec(info)?.[1] ?? 0)
    }
    return n
  }
  const tokensInRedis = async (id: string) => Number(await probe.hget(`c:{${id}}:bucket`, 'tokens'))

  t.test('a busy account asks Redis once a lease, not once a request', async (t) => {
    const before = await scriptCalls()
    let last = Number.POSITIVE_INFINITY
    let rising = 0
    const wrong: string[] = []
    for (let i = 0; i < 200; i++) {
      const got = await take(a, 'busy', 400, 400)
      if (!got.ok || got.limit !== 400) wrong.push(`${i}: ok ${got.ok}, limit ${got.limit}`)
      // Within a lease remaining counts down by one; a new lease adds what refilled meanwhile.
      if (got.remaining >= last) rising++
      last = got.remaining
    }
    t.same(wrong, [], 'all 200 admitted, each with the burst as its limit')
    const calls = (await scriptCalls()) - before
    t.ok(calls <= 40, `200 requests took ${calls} script calls`)
    t.ok(calls >= 1, 'the bucket was asked')
    t.ok(rising <= calls, `remaining rose only when a lease came (${rising} times)`)
  })

  t.test('two front ends together admit no more than the bucket', async (t) => {
    const rate = 200
    const burst = 1000
    const started = Date.now()
    const results: boolean[] = []
    for (let wave = 0; wave < 15; wave++) {
      const got = await Promise.all(
        Array.from({ length: 100 }, (_, i) => take(i % 2 ? a : b, 'split', rate, burst)),
      )
      for (const g of got) results.push(g.ok)
    }
    const seconds = (Date.now() - started) / 1000
    const ok = results.filter(Boolean).length
    // What refilled while the requests ran, and a token of rounding.
    const most = burst + Math.ceil(rate * seconds) + 1
    t.ok(ok <= most, `${ok} admitted, at most ${most} in ${seconds} s`)
    // Each front end may hold a lease it has not spent: at most rate/20 = 10 tokens.
    t.ok(ok >= burst - 20, `${ok} admitted: about one burst`)
    t.ok(results.length - ok > 0, 'the rest were refused')
  })

  t.test('a burst sent all at once over two front ends is admitted within 10%', async (t) => {
    // A slow refill, so what the bucket refills meanwhile hardly counts.
    const rate = 50
    const burst = 1000
    const started = Date.now()
    const got = await Promise.all(
      Array.from({ length: burst }, (_, i) => take(i % 2 ? a : b, 'whole', rate, burst)),
    )
    const ok = got.filter((g) => g.ok).length
    t.ok(ok >= burst * 0.9, `${ok} of a burst of ${burst} admitted`)
    t.ok(ok <= burst, 'no more than were sent')
    const twice = await Promise.all(
      Array.from({ length: 2 * burst }, (_, i) => take(i % 2 ? a : b, 'twice', rate, burst)),
    )
    const s2 = (Date.now() - started) / 1000
    const ok2 = twice.filter((g) => g.ok).length
    const most = burst + Math.ceil(rate * s2) + 1
    t.ok(ok2 <= most, `twice the burst: ${ok2} admitted, at most ${most} in ${s2} s`)
    t.ok(ok2 >= burst * 0.9, `and about one burst (${ok2})`)
  })

  t.test('one request at a time, alternating front ends, gets its burst within 10%', async (t) => {
    // Leases: each front end holds one, of at most rate/20 and a sixteenth of what is left
    // shared between the two, and spends it from memory.
    const rate = 200
    const burst = 2000
    const before = await scriptCalls()
    const started = Date.now()
    let ok = 0
    for (let i = 0; i < burst; i++) if ((await take(i % 2 ? a : b, 'seq', rate, burst)).ok) ok++
    const calls = (await scriptCalls()) - before
    t.ok(ok >= burst * 0.9, `${ok} of ${burst} admitted`)
    t.ok(calls < burst / 2, `${calls} script calls for ${burst} requests`)
    let more = 0
    for (let i = 0; i < 200; i++) if ((await take(i % 2 ? a : b, 'seq', rate, burst)).ok) more++
    const total = (Date.now() - started) / 1000
    const most = burst + Math.ceil(rate * total) + 1
    t.ok(ok + more <= most, `then ${more} more: ${ok + more} in all, at most ${most}`)
  })

  t.test('what a lease did not spend goes back with the next call', async (t) => {
    const state = async () => {
      const [tokens, at] = await probe.hmget('c:{back}:bucket', 'tokens', 'at')
      return { tokens: Number(tokens), at: Number(at) }
    }
    // Half the bucket spent at once, so refill and what comes back are not capped by the burst.
    const first = await take(a, 'back', 400, 100_000, 50_000)
    t.equal(first.ok, true)
    const s1 = await state()
    const leased = 50_000 - s1.tokens
    t.equal(leased, 20, 'the first call leased rate/20 tokens')
    t.equal(first.remaining, 50_000, 'remaining counts what this front end holds')
    await new Promise((r) => setTimeout(r, LEASE_MS + 50))
    t.equal((await take(a, 'back', 400, 100_000)).ok, true)
    const s2 = await state()
    // Refilled by the Redis clock, the 20 given back, then one token and a new lease of 20.
    const want = s1.tokens + ((s2.at - s1.at) * 400) / 1000 + 20 - 1 - 20
    t.ok(Math.abs(s2.tokens - want) < 0.01, `the bucket holds ${s2.tokens}, ${want} expected`)
  })

  t.test('a bucket running low is asked every time (no leases)', async (t) => {
    const got: Bucket[] = []
    for (let i = 0; i < 12; i++) got.push(await take(a, 'low', 1, 10))
    t.same(
      got.map((g) => g.ok),
      [...Array(10).fill(true), false, false],
      'ten of a burst of ten, then refused',
    )
    t.equal(got[10]!.retryAfter >= 1, true, 'a refusal says when to retry')
    t.equal((await tokensInRedis('low')) < 1, true, 'nothing is held back from the bucket')
  })

  t.test('requests waiting on a call that fails fail with it, without calling again', async (t) => {
    // A bucket key of the wrong type makes the script fail, as a broken Redis would.
    await probe.set('c:{broken}:bucket', 'not a hash')
    const before = await scriptCalls()
    const got = await Promise.all(
      Array.from({ length: 3 }, () =>
        take(a, 'broken', 400, 400).then(
          () => 'admitted',
          (e: { code?: string }) => e.code ?? 'error',
        ),
      ),
    )
    t.same(got, ['IO_ERROR', 'IO_ERROR', 'IO_ERROR'], 'all three are refused')
    t.equal((await scriptCalls()) - before, 1, 'by the one call they waited on')
  })

  t.test(
    'a bucket call sent again (ioredis resends one lost with its connection) counts once',
    async (t) => {
      const id = `acct_resent${Date.now()}`
      const key = `c:{${id}}:bucket`
      // rate 100/s, burst 1000, cost 1, nothing given back, a lease of up to 50 asked.
      const call = (marker: string) =>
        probe.eval(BUCKET, 2, key, `c:{${id}}:bucket:${marker}`, 100, 1000, 1, 0, 50) as Promise<
          number[]
        >
      const first = await call('fe.1')
      const tokens = await tokensInRedis(id)
      const again = await call('fe.1')
      t.same(again, first, 'the same answer')
      t.ok(
        Math.abs((await tokensInRedis(id)) - tokens) < 2,
        'and the bucket as it was: no tokens taken, leased or given back twice',
      )
      await call('fe.2')
      t.ok(
        Math.abs((await tokensInRedis(id)) - tokens) >= 2,
        'a call of its own changes the bucket (gives back, takes, leases)',
      )
    },
  )
}
