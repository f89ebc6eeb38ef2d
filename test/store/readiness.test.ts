// /readyz on Redis Cluster says what the cluster does: ready while every master answers,
// degraded (still ready) while one does not and the rest serve, not ready once the cluster
// says it is failing and refuses every command. A real cluster, real stopped and killed nodes.
import { execFileSync } from 'node:child_process'
import t from 'tap'
import { plansFile } from '../helpers/plans.js'
import { startRedisCluster } from '../helpers/redis-cluster.js'
import { startServer } from '../helpers/server.js'
import { sleep } from '../server/contract/http.js'

const cluster = await startRedisCluster({ nodeTimeoutMs: 4000 })
if (typeof cluster === 'string') t.skip(cluster)
else {
  t.teardown(() => cluster.stop())
  const srv = await startServer({ plans: plansFile(), args: ['--store', cluster.url] })
  t.teardown(() => srv.stop())
  const readyz = async () => {
    const res = await fetch(`${srv.url}/readyz`)
    return { status: res.status, body: (await res.json()) as Record<string, string> }
  }
  /** Polls /readyz until `ok` holds of it, for at most `ms`; the last answer. */
  const until = async (ok: (r: Awaited<ReturnType<typeof readyz>>) => boolean, ms: number) => {
    const end = Date.now() + ms
    for (;;) {
      const r = await readyz()
      if (ok(r) || Date.now() > end) return r
      await sleep(200)
    }
  }

  // Found before the tests are declared: tap ends a file whose tests are all done.
  const [master] = await cluster.masters()
  const replicaPort = Number(
    /slave0:ip=[^,]+,port=(\d+)/.exec(
      execFileSync('redis-cli', ['-p', String(master!.port), 'INFO', 'replication'], {
        encoding: 'utf8',
      }),
    )?.[1],
  )
  const replica = cluster.nodes.find((n) => n.port === replicaPort)!

  t.test('every master answering: ready', async (t) => {
    const r = await until((r) => r.status === 200 && r.body.storage === undefined, 5000)
    t.same(r, { status: 200, body: { status: 'ready' } })
  })

  t.test('a master that stops answering: degraded, still ready, and back', async (t) => {
    master!.proc.kill('SIGSTOP')
    let r: Awaited<ReturnType<typeof readyz>>
    try {
      // Before the node timeout (4 s): the cluster has not yet called it failed.
      r = await until((r) => r.body.storage === 'degraded', 3500)
    } finally {
      master!.proc.kill('SIGCONT')
    }
    t.equal(r.status, 200, 'still in rotation')
    t.equal(r.body.storage, 'degraded')
    t.match(r.body.reason, String(master!.port), 'naming the master')
    const back = await until((r) => r.body.storage === undefined, 5000)
    t.same(back, { status: 200, body: { status: 'ready' } }, 'ready again once it answers')
  })

  t.test('a slot range with no master left: not ready, saying why', async (t) => {
    t.ok(replica, 'the master has a replica')
    await cluster.kill(replica)
    await cluster.kill(master!)
    const r = await until((r) => r.status === 503, cluster.nodeTimeoutMs + 8000)
    t.equal(r.status, 503, 'out of rotation')
    t.equal(r.body.storage, 'failed')
    t.match(r.body.reason, /cluster_state:fail/)
    const metrics = await (await fetch(`${srv.url}/metrics`)).text()
    t.match(metrics, /cairn_storage_state\{state="failed"\} 1/)
  })
}
