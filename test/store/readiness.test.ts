// /readyz on Redis Cluster says what the cluster does: ready while every master answers,
// degraded (still ready) while one does not and the rest serve, not ready once the cluster
// says it is failing and refuses every command. A real cluster, real stopped and killed nodes.
import { execFileSync } from 'node:child_process'
import t from 'tap'
import { plansFile } from '../helpers/plans.js'
import { startRedisCluster } from '../helpers/redis-cluster.js'
import { cairn } from '../helpers/cli.js'
import { startServer } from '../helpers/server.js'
import { sleep } from '../server/contract/http.js'

// A node timeout long enough that a stopped master is seen as silent well before the
// cluster calls it failed, on a busy machine too.
const cluster = await startRedisCluster({ nodeTimeoutMs: 10_000 })
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
  const replicaOf = (port: number) =>
    Number(
      /slave0:ip=[^,]+,port=(\d+)/.exec(
        execFileSync('redis-cli', ['-p', String(port), 'INFO', 'replication'], {
          encoding: 'utf8',
        }),
      )?.[1],
    )
  const [master] = await cluster.masters()
  const replicaPort = replicaOf(master!.port)
  const replica = cluster.nodes.find((n) => n.port === replicaPort)!

  t.test('every master answering: ready', async (t) => {
    const r = await until((r) => r.status === 200 && r.body.storage === undefined, 5000)
    t.same(r, { status: 200, body: { status: 'ready' } })
  })

  t.test('a master that stops answering: degraded, still ready, and back', async (t) => {
    master!.proc.kill('SIGSTOP')
    let r: Awaited<ReturnType<typeof readyz>>
    try {
      // Well before the node timeout (10 s): the cluster has not yet called it failed.
      r = await until((r) => r.body.storage === 'degraded', 6000)
    } finally {
      master!.proc.kill('SIGCONT')
    }
    t.equal(r.status, 200, 'still in rotation')
    t.equal(r.body.storage, 'degraded')
    t.match(r.body.reason, String(master!.port), 'naming the master')
    const back = await until((r) => r.body.storage === undefined, 5000)
    t.same(back, { status: 200, body: { status: 'ready' } }, 'ready again once it answers')
  })

  t.test('a front end starts, and the command line runs, while a replica is frozen', async (t) => {
    const others = (await cluster.masters()).filter((m) => m.port !== master!.port)
    const frozen = cluster.nodes.find((n) => n.port === replicaOf(others[0]!.port))!
    frozen.proc.kill('SIGSTOP')
    try {
      const second = await startServer({ plans: plansFile(), args: ['--store', cluster.url] })
      t.teardown(() => second.stop())
      t.ok(
        second.lines.some(
          (l) => l.includes('did not answer at start') && l.includes(String(frozen.port)),
        ),
        'it says which node it could not check',
      )
      const listed = await cairn(['account', 'list', '--store', cluster.url])
      t.equal(listed.code, 0, `the command line works (${listed.stderr})`)
    } finally {
      frozen.proc.kill('SIGCONT')
    }
  })

  t.test('a master killed: degraded until its replica takes over, then ready', async (t) => {
    await cluster.kill(master!)
    const r = await until((r) => r.body.storage === 'degraded', 6000)
    t.equal(r.status, 200, 'still in rotation')
    t.match(r.body.reason, String(master!.port), 'naming the master that is gone')
    const back = await until(
      (r) => r.status === 200 && r.body.storage === undefined,
      cluster.nodeTimeoutMs + 15_000,
    )
    t.same(back, { status: 200, body: { status: 'ready' } }, 'ready once the replica took over')
  })

  t.test('a slot range with no master left: not ready, saying why, and 503s', async (t) => {
    const acct = await srv.createAccount()
    await fetch(`${srv.baseUrl}/namespaces`, {
      method: 'POST',
      headers: { 'x-api-key': acct.apiKey, 'content-type': 'application/json' },
      body: '{"name":"r"}',
    })
    // The replica took over: it is the master now, with no replica of its own.
    await cluster.kill(replica)
    const r = await until((r) => r.status === 503, cluster.nodeTimeoutMs + 8000)
    t.equal(r.status, 503, 'out of rotation')
    t.equal(r.body.storage, 'failed')
    t.match(r.body.reason, /cluster_state:fail/)
    const metrics = await (await fetch(`${srv.url}/metrics`)).text()
    t.match(metrics, /cairn_storage_state\{state="failed"\} 1/)
    // The cluster refuses everything now: a request is answered 503 in seconds, not held.
    const started = Date.now()
    const res = await fetch(`${srv.baseUrl}/r/k`, {
      headers: { 'x-api-key': acct.apiKey },
      signal: AbortSignal.timeout(30_000),
    })
    await res.arrayBuffer()
    t.equal(res.status, 503)
    t.comment(`answered in ${Date.now() - started} ms`)
    t.ok(Date.now() - started < 9000, 'within seconds')
  })
}
