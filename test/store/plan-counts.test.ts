// A plan's counts are the account's, however many front ends serve it: two Cairn front ends
// on one real Redis Cluster never admit more concurrent watches or namespaces than the plan
// allows, nor pass a storage quota by more than one write, and a WebSocket watch refused for its key, rate limit, daily quota or watch limit
// is refused as HTTP before the upgrade.
import t from 'tap'
import WebSocket from 'ws'
import { plansFile } from '../helpers/plans.js'
import { clusterFor } from '../helpers/redis-cluster.js'
import { type TestServer, startServer } from '../helpers/server.js'
import { Client, sleep } from '../server/contract/http.js'
import { watch } from '../server/contract/sse.js'

const cluster = await clusterFor(t)
if (cluster) {
  const plans = plansFile(
    { id: 'three', maxWatches: 3, maxNamespaces: 5 },
    { id: 'slow', ratePerSecond: 1, burst: 2 },
    { id: 'daily', requestsPerDay: 2 },
    { id: 'quota', maxStorageBytes: 64 * 1024 },
  )
  const start = () => startServer({ plans, args: ['--store', cluster.url] })
  const a: TestServer = await start()
  t.teardown(() => a.stop())
  const b: TestServer = await start()
  t.teardown(() => b.stop())

  /** How a WebSocket watch with the key in a header is answered: HTTP status, or the message. */
  const wsAnswer = (srv: TestServer, path: string, key: string) =>
    new Promise<string>((resolve) => {
      const ws = new WebSocket(`${srv.baseUrl.replace(/^http/, 'ws')}${path}`, {
        headers: { 'x-api-key': key },
      })
      ws.on('unexpected-response', (_req, res) => {
        let body = ''
        res.on('data', (c) => {
          body += c
        })
        res.on('end', () => {
          ws.terminate()
          const retry = res.headers['retry-after'] ? ' retry' : ''
          resolve(`http ${res.statusCode} ${JSON.parse(body).error.code}${retry}`)
        })
      })
      ws.on('open', () => {
        ws.close()
        resolve('upgraded')
      })
      ws.on('message', (m) => resolve(`message ${JSON.parse(String(m)).code}`))
      ws.on('error', () => {})
    })

  t.test(
    'watches opened on both front ends up to the plan, the next refused on either',
    async (t) => {
      const acct = await a.createAccount(undefined, { plan: 'three' })
      await new Client(a.baseUrl, acct.apiKey).createNamespace('w')
      const opened = await Promise.all([
        watch(a.baseUrl, '/w?watch=1', acct.apiKey),
        watch(b.baseUrl, '/w?watch=1', acct.apiKey),
        watch(a.baseUrl, '/w?watch=1', acct.apiKey),
        watch(b.baseUrl, '/w?watch=1', acct.apiKey),
        watch(a.baseUrl, '/w?watch=1', acct.apiKey),
        watch(b.baseUrl, '/w?watch=1', acct.apiKey),
      ])
      t.teardown(() => {
        for (const w of opened) w.close()
      })
      const statuses = opened.map((w) => w.status).sort()
      t.same(statuses, [200, 200, 200, 429, 429, 429], 'six asked at once over two: three open')
      for (const w of opened) if (w.status === 429) t.equal(w.body.error.code, 'watch_limit')
      const onA = await watch(a.baseUrl, '/w?watch=1', acct.apiKey)
      const onB = await watch(b.baseUrl, '/w?watch=1', acct.apiKey)
      t.teardown(() => {
        onA.close()
        onB.close()
      })
      t.equal(onA.status, 429, 'the next refused on A')
      t.equal(onB.status, 429, 'and on B')
      t.equal(
        await wsAnswer(b, '/w?watch=1', acct.apiKey),
        'http 429 watch_limit',
        'a WebSocket too',
      )
      // One closed on either front end frees a watch for both.
      opened.find((w) => w.status === 200)!.close()
      let again = await watch(b.baseUrl, '/w?watch=1', acct.apiKey)
      for (let i = 0; i < 50 && again.status !== 200; i++) {
        await sleep(50)
        again = await watch(b.baseUrl, '/w?watch=1', acct.apiKey)
      }
      t.teardown(() => again.close())
      t.equal(again.status, 200, 'a watch closed frees one for the other front end')
      const over = await watch(a.baseUrl, '/w?watch=1', acct.apiKey)
      t.teardown(() => over.close())
      t.equal(over.status, 429, 'and the limit holds again')
    },
  )

  t.test('namespaces made on both front ends at once stop at the plan', async (t) => {
    const acct = await a.createAccount(undefined, { plan: 'three' })
    const clients = [new Client(a.baseUrl, acct.apiKey), new Client(b.baseUrl, acct.apiKey)]
    const made = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        clients[i % 2]!.post('/namespaces', { name: `n${i}` }).then((r) => r.status),
      ),
    )
    t.equal(made.filter((s) => s === 201).length, 5, 'five of twenty made')
    t.equal(made.filter((s) => s === 403).length, 15, 'the rest refused')
    const listed = (await clients[1]!.get('/namespaces')).json.namespaces
    t.equal(listed.length, 5, 'five listed')
  })

  t.test('a storage quota reached through both front ends at once', async (t) => {
    const acct = await a.createAccount(undefined, { plan: 'quota' })
    const clients = [new Client(a.baseUrl, acct.apiKey), new Client(b.baseUrl, acct.apiKey)]
    await clients[0]!.createNamespace('q')
    const value = 'x'.repeat(1000)
    // A key of 4 bytes and a value of 1002 (the JSON string): 1,006 bytes a write.
    const one = 4 + JSON.stringify(value).length
    const quota = 64 * 1024
    const statuses: number[] = []
    const kept: string[] = []
    for (let wave = 0; wave < 4; wave++) {
      const got = await Promise.all(
        Array.from({ length: 50 }, (_, i) => {
          const key = `k${wave}${String(i).padStart(2, '0')}`
          return clients[i % 2]!.put(`/q/${key}`, { value }).then((r) => {
            if (r.status === 201) kept.push(key)
            return r.status
          })
        }),
      )
      statuses.push(...got)
    }
    const stored = statuses.filter((s) => s === 201).length
    t.equal(stored + statuses.filter((s) => s === 403).length, 200, 'every answer 201 or 403')
    const ns = (await clients[1]!.get('/namespaces')).json.namespaces.find(
      (n: any) => n.name === 'q',
    )
    t.equal(ns.keys, stored, 'every write answered 201 is there, no other')
    t.ok(ns.bytes <= quota + one, `${ns.bytes} bytes stored: at most the quota and one write`)
    t.ok(ns.bytes > quota - 2 * one, `and the quota used (${ns.bytes} of ${quota})`)
    const more = await clients[0]!.put('/q/zz99', { value })
    t.equal(more.status, 403, 'the next write refused')
    t.equal(more.json.error.code, 'storage_quota_exceeded')
    t.equal((await clients[1]!.del(`/q/${kept[0]}`)).status, 200, 'a delete makes room')
    const after = await clients[1]!.put('/q/zz98', { value })
    t.equal(after.status, 201, 'and a write fits again, counted afresh')
  })

  t.test('a WebSocket refusal known from its headers is an HTTP answer', async (t) => {
    t.equal(await wsAnswer(a, '/w?watch=1', 'cairn_wrong'), 'http 401 unauthorized', 'a wrong key')
    const slow = await a.createAccount(undefined, { plan: 'slow' })
    await new Client(a.baseUrl, slow.apiKey).createNamespace('w')
    // The bucket spent by requests at once, a watch is refused by the rate limit (tried again
    // should a token have refilled between the two).
    const c = new Client(b.baseUrl, slow.apiKey)
    let limited = 'upgraded'
    for (let i = 0; i < 5 && limited === 'upgraded'; i++) {
      await Promise.all(Array.from({ length: 5 }, () => c.get('/namespaces')))
      limited = await wsAnswer(b, '/w?watch=1', slow.apiKey)
    }
    t.equal(limited, 'http 429 rate_limited retry', 'the rate limit, with Retry-After')
    const daily = await a.createAccount(undefined, { plan: 'daily' })
    const d = new Client(a.baseUrl, daily.apiKey)
    t.equal((await d.post('/namespaces', { name: 'w' })).status, 201)
    t.equal((await d.get('/namespaces')).status, 200)
    // Usage is flushed every 250 ms here: both front ends see the day's two requests.
    let answer = ''
    for (let i = 0; i < 40 && !answer.startsWith('http 429'); i++) {
      await sleep(100)
      answer = await wsAnswer(b, '/w?watch=1', daily.apiKey)
    }
    t.equal(answer, 'http 429 quota_exceeded retry', 'and the daily quota')
  })
}
