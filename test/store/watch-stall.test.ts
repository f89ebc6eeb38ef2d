// A watch on one front end misses nothing when the masters' replicas stall and resume
// (SIGSTOP, SIGCONT) while another front end writes: every change reaches it once, in
// version order, as a watch opened afterwards from the start sees them. Two watches: one open
// before the stall, one opened during it (its stream poller starts while no replica answers).
// The cluster's node timeout is longer than the stall, so nothing fails over.
import t from 'tap'
import { plansFile } from '../helpers/plans.js'
import { startRedisCluster } from '../helpers/redis-cluster.js'
import { startServer } from '../helpers/server.js'
import { Client, sleep } from '../server/contract/http.js'
import { watch } from '../server/contract/sse.js'

const cluster = await startRedisCluster({ nodeTimeoutMs: 60_000 })
if (typeof cluster === 'string') t.skip(cluster)
else {
  t.teardown(() => cluster.stop())
  const start = () => startServer({ plans: plansFile(), args: ['--store', cluster.url] })
  const a = await start()
  t.teardown(() => a.stop())
  const b = await start()
  t.teardown(() => b.stop())
  const acct = await a.createAccount()
  const onA = new Client(a.baseUrl, acct.apiKey)

  t.test('replicas stopped and resumed: watches on the other front end miss nothing', async (t) => {
    await onA.createNamespace('before')
    await onA.createNamespace('during')
    const early = await watch(b.baseUrl, '/before?watch=1', acct.apiKey)
    t.teardown(() => early.close())
    await early.until(1)
    for (let i = 1; i <= 3; i++) await onA.put(`/before/k${i}`, { value: i })
    await onA.put('/during/k1', { value: 1 })

    const masters = await cluster.masters()
    const replicas = cluster.nodes.filter((n) => !masters.includes(n))
    for (const r of replicas) r.proc.kill('SIGSTOP')
    let resumed = false
    const resume = () => {
      if (resumed) return
      resumed = true
      for (const r of replicas) r.proc.kill('SIGCONT')
    }
    t.teardown(resume)
    // Opened while no replica answers: its poller cannot start by a write's version now.
    const late = watch(b.baseUrl, '/during?watch=1&since=1', acct.apiKey)
    const statuses: number[] = []
    for (let i = 4; i <= 6; i++)
      statuses.push((await onA.put(`/before/k${i}`, { value: i })).status)
    for (let i = 2; i <= 4; i++)
      statuses.push((await onA.put(`/during/k${i}`, { value: i })).status)
    await sleep(3500)
    resume()
    await cluster.waitReplicated()
    for (let i = 7; i <= 9; i++)
      statuses.push((await onA.put(`/before/k${i}`, { value: i })).status)
    for (let i = 5; i <= 7; i++)
      statuses.push((await onA.put(`/during/k${i}`, { value: i })).status)
    t.comment(`write answers during and after the stall: ${statuses.join(' ')}`)
    t.same(statuses.slice(-6), [201, 201, 201, 201, 201, 201], 'acknowledged once replicas answer')

    const reference = async (ns: string, n: number) => {
      const w = await watch(a.baseUrl, `/${ns}?watch=1&since=0`, acct.apiKey)
      t.teardown(() => w.close())
      return (await w.until(n + 1, 20_000)).slice(1).map((e) => e.id)
    }
    const wantBefore = await reference('before', 9)
    t.same(wantBefore, ['1', '2', '3', '4', '5', '6', '7', '8', '9'], 'every write is in the feed')
    const gotEarly = (await early.until(10, 20_000)).slice(1).map((e) => e.id)
    t.same(gotEarly, wantBefore, 'the watch open before the stall got each change once, in order')

    const l = await late
    t.teardown(() => l.close())
    const wantDuring = (await reference('during', 7)).slice(1)
    t.equal(l.status, 200, 'the watch opened during the stall opened')
    const gotLate = (await l.until(wantDuring.length + 1, 20_000)).slice(1).map((e) => e.id)
    t.same(gotLate, wantDuring, 'the watch opened during the stall got each change once, in order')
  })
}
