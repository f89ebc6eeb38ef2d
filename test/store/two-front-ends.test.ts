// Two Cairn front ends on one Redis Cluster, as a load balancer would spread one tenant over
// them: what one does, the other sees. Read-your-writes across nodes; a namespace, a
// dashboard sign-up and a revoked key seen by the other node; one token bucket shared (a
// burst split across the two gets about one burst); usage totals exact across both.
import t from 'tap'
import { preSession } from '../helpers/dashboard-api.js'
import { plansFile } from '../helpers/plans.js'
import { clusterFor } from '../helpers/redis-cluster.js'
import { type TestServer, startServer } from '../helpers/server.js'
import { Client, sleep } from '../server/contract/http.js'
import { watch } from '../server/contract/sse.js'

const cluster = await clusterFor(t)
if (cluster) {
  const plans = plansFile(
    { id: 'tight', ratePerSecond: 1, burst: 20 },
    { id: 'bursty', ratePerSecond: 50, burst: 100 },
  )
  const start = () => startServer({ plans, args: ['--store', cluster.url] })
  const a: TestServer = await start()
  t.teardown(() => a.stop())
  const b: TestServer = await start()
  t.teardown(() => b.stop())

  const made = await a.createAccount()
  const onA = new Client(a.baseUrl, made.apiKey)
  const onB = new Client(b.baseUrl, made.apiKey)

  t.test('a write on one front end is read on the other at once', async (t) => {
    await onA.createNamespace('ryw')
    for (let i = 0; i < 50; i++) {
      const [writer, reader] = i % 2 ? [onA, onB] : [onB, onA]
      const put = await writer.put(`/ryw/k${i}`, { value: { i } })
      t.equal(put.status, 201)
      const got = await reader.get(`/ryw/k${i}`)
      if (got.status !== 200 || got.json.value.i !== i) {
        t.fail(`k${i}: ${got.status} ${got.text}`)
        return
      }
      t.equal(got.headers.etag, put.headers.etag, 'the same version on both')
    }
    const listed = await onB.listAll('ryw')
    t.equal(listed.length, 50, 'the other front end lists every key')
    const metrics = await (await fetch(`${b.url}/metrics`)).text()
    const calls = Number(/^cairn_redis_read_lane_calls_total (\d+)/m.exec(metrics)?.[1] ?? 0)
    t.ok(calls > 0, `the reads went by the read lane (${calls} calls in /metrics)`)
  })

  t.test('a namespace made on one front end is usable on the other at once', async (t) => {
    t.equal((await onB.get('/fresh/x')).status, 404, 'not there yet')
    t.equal((await onA.post('/namespaces', { name: 'fresh' })).status, 201)
    t.equal((await onB.put('/fresh/x', { value: 1 })).status, 201, 'B writes into it')
    const names = (await onB.get('/namespaces')).json.namespaces.map((n: any) => n.name)
    t.ok(names.includes('fresh'), 'B lists it')
    t.equal((await onA.del('/namespaces/fresh')).status, 200)
    const after = await onB.put('/fresh/y', { value: 2 })
    t.equal(after.status, 404, 'a namespace deleted on A refuses writes on B at once')
    t.notOk(
      (await onB.get('/namespaces')).json.namespaces.some((n: any) => n.name === 'fresh'),
      'nor does B list it',
    )
    t.equal((await onB.post('/namespaces', { name: 'fresh' })).status, 201, 'B makes it again')
    t.ok(
      (await onA.get('/namespaces')).json.namespaces.some((n: any) => n.name === 'fresh'),
      'and A lists it at once',
    )
    t.equal((await onA.put('/fresh/z', { value: 3 })).status, 201)
    t.equal((await onB.get('/fresh/z')).json.value, 3)
  })

  t.test('a dashboard sign-up on one front end logs in and calls /v1 on the other', async (t) => {
    const email = `signup-${Date.now()}@example.com`
    const pre = await preSession(a.url)
    const res = await fetch(`${a.url}/dashboard/api/signup`, {
      method: 'POST',
      headers: {
        origin: a.url,
        cookie: pre.cookie,
        'x-csrf-token': pre.token,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ email, password: 'correct horse battery' }),
    })
    t.equal(res.status, 201)
    const body: any = await res.json()
    const session = res.headers.getSetCookie().find((c) => c.startsWith('cairn_session='))!
    const me = await fetch(`${b.url}/dashboard/api/me`, {
      headers: { cookie: session.split(';')[0]! },
    })
    t.equal(me.status, 200, 'the session made on A is good on B')
    t.equal(((await me.json()) as any).account.email, email)
    const v1 = new Client(b.baseUrl, body.apiKey.secret)
    t.equal((await v1.get('/namespaces')).status, 200, 'the new key works on B')
    const again = await fetch(`${b.url}/dashboard/api/signup`, {
      method: 'POST',
      headers: {
        origin: b.url,
        cookie: (await preSession(b.url)).cookie,
        'x-csrf-token': (await preSession(b.url)).token,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ email, password: 'another password' }),
    })
    t.not(again.status, 201, 'the same email cannot sign up again on B')
  })

  t.test('a key revoked on one front end is refused by the other within 2 s', async (t) => {
    const extra = await a.operator('key.create', { email: made.email, name: 'temp' })
    const temp = new Client(b.baseUrl, extra.secret)
    t.equal((await temp.get('/namespaces')).status, 200, 'B knows the key (and caches it)')
    await a.operator('key.revoke', { email: made.email, id: extra.key.id })
    const revokedAt = Date.now()
    let status = 200
    while (status === 200 && Date.now() - revokedAt < 5000) {
      status = (await temp.get('/namespaces')).status
      if (status === 200) await sleep(50)
    }
    const took = Date.now() - revokedAt
    t.equal(status, 401, 'B refuses the revoked key')
    t.ok(took <= 2000, `within 2 s (${took} ms)`)
  })

  t.test(
    'one token bucket: a burst split across both front ends gets about one burst',
    async (t) => {
      const tight = await a.createAccount(undefined, { plan: 'tight' })
      const clients = [new Client(a.baseUrl, tight.apiKey), new Client(b.baseUrl, tight.apiKey)]
      const statuses = await Promise.all(
        Array.from({ length: 60 }, (_, i) =>
          clients[i % 2]!.get('/namespaces').then((r) => r.status),
        ),
      )
      const ok = statuses.filter((s) => s === 200).length
      const limited = statuses.filter((s) => s === 429).length
      t.equal(ok + limited, 60, 'every answer is 200 or 429')
      // 20 in the burst, plus at most a token or two refilled while the requests ran.
      t.ok(ok >= 20 && ok <= 23, `about one burst of 20 got through (${ok})`)
    },
  )

  t.test("a plan's whole burst sent at once over both front ends is admitted", async (t) => {
    const burst = 100
    const rate = 50
    const send = async (n: number) => {
      const acct = await a.createAccount(undefined, { plan: 'bursty' })
      const clients = [new Client(a.baseUrl, acct.apiKey), new Client(b.baseUrl, acct.apiKey)]
      const started = Date.now()
      const statuses = await Promise.all(
        Array.from({ length: n }, (_, i) =>
          clients[i % 2]!.get('/namespaces').then((r) => r.status),
        ),
      )
      const seconds = (Date.now() - started) / 1000
      const ok = statuses.filter((s) => s === 200).length
      t.equal(ok + statuses.filter((s) => s === 429).length, n, 'every answer is 200 or 429')
      return { ok, refilled: Math.ceil(rate * seconds) }
    }
    const once = await send(burst)
    t.ok(once.ok >= burst * 0.9, `exactly the burst: ${once.ok} of ${burst} admitted`)
    const twice = await send(2 * burst)
    t.ok(
      twice.ok <= burst + twice.refilled + 1,
      `twice the burst: ${twice.ok} admitted, at most ${burst} + ${twice.refilled} refilled`,
    )
    t.ok(twice.ok >= burst * 0.9, `and at least the burst within 10% (${twice.ok})`)
  })

  t.test('usage counts from both front ends add up exactly', async (t) => {
    const acct = await a.createAccount()
    const ca = new Client(a.baseUrl, acct.apiKey)
    const cb = new Client(b.baseUrl, acct.apiKey)
    await ca.createNamespace('counted')
    for (let i = 0; i < 30; i++) await ca.put(`/counted/a${i}`, { value: i })
    for (let i = 0; i < 20; i++) await cb.put(`/counted/b${i}`, { value: i })
    for (let i = 0; i < 7; i++) await cb.get(`/counted/a${i}`)
    // Each front end adds its counts every 250 ms here (CAIRN_USAGE_FLUSH_MS).
    let ops: any
    for (let tries = 0; tries < 40; tries++) {
      await sleep(250)
      ops = (await ca.get('/usage')).json.today.operations
      if (ops.put === 50 && ops.get === 7) break
    }
    t.equal(ops.put, 50, 'puts: 30 on A and 20 on B')
    t.equal(ops.get, 7, 'gets: 7 on B')
    const onOther = (await cb.get('/usage')).json.today.operations
    t.equal(onOther.put, 50, 'B reports the same total')
  })

  t.test('a watch resumes on the other front end with no gap and no repeat', async (t) => {
    await onA.createNamespace('feed')
    const w = await watch(a.baseUrl, '/feed?watch=1', made.apiKey)
    t.teardown(() => w.close())
    await w.until(1)
    for (let i = 1; i <= 5; i++) await (i % 2 ? onA : onB).put(`/feed/k${i}`, { value: i })
    const seen = await w.until(6)
    t.same(
      seen.slice(1).map((e) => e.id),
      ['1', '2', '3', '4', '5'],
      'writes on both front ends reach a watch on one',
    )
    w.close()
    // The client comes back through the other front end, resuming after the last event.
    for (let i = 6; i <= 8; i++) await onA.put(`/feed/k${i}`, { value: i })
    const again = await watch(b.baseUrl, '/feed?watch=1', made.apiKey, { 'last-event-id': '3' })
    t.teardown(() => again.close())
    await onB.put('/feed/k9', { value: 9 })
    const resumed = await again.until(7)
    t.same(
      resumed.map((e) => e.id),
      ['3', '4', '5', '6', '7', '8', '9'],
      'history, then live, each once',
    )
  })
}
