// The ground the Redis backend stands on, tested on a real cluster: a write acknowledged after
// the append-only file synced it and a replica took it (WAIT) survives losing its master; the
// client (ioredis) finds the new master by itself; and a namespace's keys, tagged into one
// hash slot, sit on one master, which is what makes ordered listing and atomic scripts work.
import Redis from 'ioredis'
import t from 'tap'
import { clusterFor } from '../helpers/redis-cluster.js'

const cluster = await clusterFor(t)
if (cluster) {
  const client = new Redis.Cluster(
    cluster.nodes.map((n) => ({ host: '127.0.0.1', port: n.port })),
    {
      scaleReads: 'master',
      // Retry while the cluster fails over, instead of failing requests at the first error.
      clusterRetryStrategy: (times) => Math.min(100 * times, 1000),
      retryDelayOnFailover: 200,
      retryDelayOnClusterDown: 200,
      retryDelayOnTryAgain: 200,
    },
  )
  t.teardown(() => client.disconnect())

  /** SET then WAIT 1 on the same master: acknowledged only once a replica has it. */
  async function durableSet(key: string, value: string): Promise<boolean> {
    const res = await client.pipeline().set(key, value).call('WAIT', '1', '2000').exec()
    return res?.[0]?.[1] === 'OK' && Number(res?.[1]?.[1]) >= 1
  }

  t.test('a hash tag keeps a namespace in one slot, on one master', async (t) => {
    const slots = new Set<number>()
    for (const k of ['{acct1:sessions}:a', '{acct1:sessions}:b', '{acct1:sessions}:zzz'])
      slots.add(Number(await client.cluster('KEYSLOT', k)))
    t.equal(slots.size, 1)
  })

  t.test('acknowledged writes survive a SIGKILL of their master', async (t) => {
    const acked = new Map<string, string>()
    for (let i = 0; i < 200; i++) {
      const key = `{fail}:k${i}`
      if (await durableSet(key, `v${i}`)) acked.set(key, `v${i}`)
    }
    t.equal(acked.size, 200, 'every write was acknowledged by a replica')
    const slot = Number(await client.cluster('KEYSLOT', '{fail}:k0'))
    const ranges = (await client.cluster('SLOTS')) as [number, number, [string, number]][]
    const masterPort = ranges.find(([from, to]) => slot >= from && slot <= to)?.[2]?.[1]
    const victim = cluster.nodes.find((n) => n.port === masterPort)
    t.ok(victim, `found the master of slot ${slot} (port ${masterPort})`)
    const t0 = Date.now()
    await cluster.kill(victim!)
    await cluster.waitHealthy(30_000)
    // The client learns the new master by itself (MOVED, then a slot refresh).
    let read = ''
    const deadline = Date.now() + 15_000
    while (Date.now() < deadline) {
      try {
        read = (await client.get('{fail}:k0')) ?? ''
        if (read) break
      } catch {}
      await new Promise((r) => setTimeout(r, 200))
    }
    t.comment(
      `served again ${Date.now() - t0} ms after the kill (node timeout ${cluster.nodeTimeoutMs} ms)`,
    )
    const lost: string[] = []
    for (const [k, v] of acked) if ((await client.get(k)) !== v) lost.push(k)
    t.same(lost, [], 'no acknowledged write was lost')
    const after = await client.pipeline().set('{fail}:after', 'x').call('WAIT', '1', '500').exec()
    t.equal(after?.[0]?.[1], 'OK', 'writes reach the new master')
    t.equal(
      Number(after?.[1]?.[1]),
      0,
      'with no replica left WAIT says so: such a write is not acknowledged as durable (503)',
    )
  })
}
