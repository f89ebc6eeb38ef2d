// A Redis master that stalls for longer than a command waits for its answer (ANSWER_MS,
// server/store/cluster/connect.ts) but not long enough to be failed over: the commands sent
// to it meanwhile fail as unavailable, and it runs them when it resumes. Usage counts sent
// in that time must then count once: an add that was sent and never answered is not sent
// again. The cluster here has a node timeout longer than the stall, so nothing fails over.
import { createHash } from 'node:crypto'
import Redis from 'ioredis'
import t from 'tap'
import { ANSWER_MS } from '../../server/store/cluster/connect.js'
import { plansFile } from '../helpers/plans.js'
import { startRedisCluster } from '../helpers/redis-cluster.js'
import { startServer } from '../helpers/server.js'
import { sleep } from '../server/contract/http.js'

const cluster = await startRedisCluster({ nodeTimeoutMs: 60_000 })
if (typeof cluster === 'string') t.skip(cluster)
else {
  t.teardown(() => cluster.stop())

  t.test('usage sent to a master that stalls past ANSWER_MS counts once', async (t) => {
    const srv = await startServer({ plans: plansFile(), args: ['--store', cluster.url] })
    t.teardown(() => srv.stop())
    const acct = await srv.createAccount()
    const headers = { 'x-api-key': acct.apiKey }
    const requests = async () => {
      const res = await fetch(`${srv.baseUrl}/usage`, { headers })
      t.equal(res.status, 200, 'GET /usage answers')
      return ((await res.json()) as { today: { requests: number } }).today.requests
    }
    const gets = async (n: number) => {
      for (let i = 0; i < n; i++) {
        const res = await fetch(`${srv.baseUrl}/v1/u/k${i}`, { headers })
        await res.arrayBuffer()
      }
    }
    // Each front end adds its counts every 2 s; one pass more for good measure.
    const settle = () => sleep(4500)
    const made = await fetch(`${srv.baseUrl}/namespaces`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: '{"name":"u"}',
    })
    t.equal(made.status, 201)

    // What 20 requests and one usage read add when every master answers.
    await settle()
    const r0 = await requests()
    await gets(20)
    await settle()
    const r1 = await requests()
    const perRound = r1 - r0
    t.ok(perRound >= 20, `20 requests and a usage read count ${perRound}`)

    // The master of the account's records, where its usage is added.
    const client = new Redis.Cluster(
      cluster.nodes.map((n) => ({ host: '127.0.0.1', port: n.port })),
    )
    t.teardown(() => client.disconnect())
    const slot = Number(await client.cluster('KEYSLOT', `{${acct.accountId}}`))
    const ranges = (await client.cluster('SLOTS')) as [number, number, [string, number]][]
    const port = ranges.find(([from, to]) => slot >= from && slot <= to)?.[2]?.[1]
    const victim = cluster.nodes.find((n) => n.port === port)
    t.ok(victim, `found the master of slot ${slot}`)

    // The same again, with that master stalled through the passes that carry them: long
    // enough for an add to time out and the next pass to come, short of a failover.
    await gets(20)
    victim!.proc.kill('SIGSTOP')
    try {
      await sleep(ANSWER_MS + 4000)
    } finally {
      victim!.proc.kill('SIGCONT')
    }
    await settle()
    await settle()
    const r2 = await requests()
    t.equal(r2 - r1, perRound, 'the requests made before the stall count once')
  })

  t.test(
    "a stalled master holding one of an account's namespaces holds no write elsewhere",
    async (t) => {
      const srv = await startServer({
        plans: plansFile({ id: 'quota', maxStorageBytes: 1_000_000 }),
        args: ['--store', cluster.url],
      })
      t.teardown(() => srv.stop())
      const client = new Redis.Cluster(
        cluster.nodes.map((n) => ({ host: '127.0.0.1', port: n.port })),
      )
      t.teardown(() => client.disconnect())
      const ranges = (await client.cluster('SLOTS')) as [number, number, [string, number]][]
      const portOf = async (key: string) => {
        const slot = Number(await client.cluster('KEYSLOT', key))
        return ranges.find(([from, to]) => slot >= from && slot <= to)![2][1]
      }
      // The account's own records stay answered: only a namespace's master stalls, which the
      // storage quota's count of the account would otherwise ask. Its records and its bucket
      // (the account's slot); its key's hash (a slot of its own), which a request reads again
      // once the front end's copy is a second old; and its storage total (a slot of its own,
      // storage-totals.ts), which every write that adds bytes reserves against. Those are
      // three masters for two accounts in nine, with none left to stall: another account then.
      const masters = new Set(ranges.map((r) => r[2][1])).size
      const account = async () => {
        // A plan with a storage quota: each write counts the account's namespaces.
        const made = await srv.createAccount(undefined, { plan: 'quota' })
        const hash = createHash('sha256').update(made.apiKey).digest('hex')
        const busy = new Set([
          await portOf(`{${made.accountId}}`),
          await portOf(`{${hash}}`),
          await portOf(`c:{q:${made.accountId}}:storage`),
        ])
        return { acct: made, busy }
      }
      let { acct, busy } = await account()
      for (let i = 0; i < 20 && busy.size === masters; i++) ({ acct, busy } = await account())
      t.ok(busy.size < masters, 'a master holds none of the account')
      const where = new Map<string, number>()
      const api = (method: string, path: string, body?: unknown) =>
        fetch(`${srv.baseUrl}${path}`, {
          method,
          headers: { 'x-api-key': acct.apiKey, 'content-type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        }).then(async (r) => ({ status: r.status, text: await r.text() }))
      const free = () => [...where.values()].some((p) => !busy.has(p))
      for (let i = 0; (where.size < 4 || !free()) && i < 40; i++) {
        const name = `q${i}`
        t.equal((await api('POST', '/namespaces', { name })).status, 201)
        where.set(name, await portOf(`c:{n:u/${acct.accountId}/${name}}:m`))
      }
      for (const name of where.keys()) await api('PUT', `/${name}/seed`, { value: 1 })
      const stalled = [...where.values()].find((p) => !busy.has(p))
      const elsewhere = [...where].filter(([, p]) => p !== stalled).map(([n]) => n)
      t.ok(stalled !== undefined && elsewhere.length > 0, 'namespaces on two masters')
      const victim = cluster.nodes.find((n) => n.port === stalled)!
      await sleep(1200) // past the second a front end keeps the account's total
      victim.proc.kill('SIGSTOP')
      try {
        for (const name of elsewhere.slice(0, 3)) {
          const started = Date.now()
          const res = await api('PUT', `/${name}/during`, { value: 2 })
          const ms = Date.now() - started
          t.equal(res.status, 201, `a write to ${name} is taken`)
          t.ok(ms < ANSWER_MS, `in ${ms} ms, not after the stalled master's timeout`)
        }
        // A front end started now has never counted the stalled namespace: that must not
        // fail the account's writes elsewhere either.
        const fresh = await startServer({
          plans: plansFile({ id: 'quota', maxStorageBytes: 1_000_000 }),
          args: ['--store', cluster.url],
        })
        t.teardown(() => fresh.stop())
        const res = await fetch(`${fresh.baseUrl}/${elsewhere[0]}/fresh`, {
          method: 'PUT',
          headers: { 'x-api-key': acct.apiKey, 'content-type': 'application/json' },
          body: '{"value":3}',
        })
        t.equal(res.status, 201, `a new front end first write to ${elsewhere[0]} is taken`)
      } finally {
        victim.proc.kill('SIGCONT')
      }
    },
  )
}
