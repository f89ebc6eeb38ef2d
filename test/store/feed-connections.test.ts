// One front end watching 2,000 namespaces on a real Redis Cluster holds at most two
// connections per master for all of them (one blocking XREAD over many streams and one side
// connection), counted with CLIENT LIST on each master, and still delivers every namespace's
// changes, to namespaces watched from the start and to ones that come and go.
import Redis from 'ioredis'
import t from 'tap'
import { openRedisStore } from '../../server/store/cluster/index.js'
import type { Change } from '../../server/store/types.js'
import { clusterFor } from '../helpers/redis-cluster.js'

const cluster = await clusterFor(t)
if (cluster) {
  const store = await openRedisStore(cluster.url, { durability: 'always' })
  t.teardown(() => store.close())
  const masters = await cluster.masters()
  const probes = masters.map((m) => new Redis({ port: m.port, host: '127.0.0.1' }))
  t.teardown(() => {
    for (const p of probes) p.disconnect()
  })
  const connections = async () =>
    Promise.all(
      probes.map(
        async (p) =>
          String(await p.client('LIST'))
            .split('\n')
            .filter((l) => l.includes('addr=') && !l.includes('cmd=client|list')).length,
      ),
    )

  t.test('2,000 watched namespaces: at most two connections per master more', async (t) => {
    const N = 2000
    const names = Array.from({ length: N }, (_, i) => `feedconn-${i}`)
    for (let i = 0; i < N; i += 200)
      await Promise.all(names.slice(i, i + 200).map((ns) => store.createNamespace(ns)))
    // Every master known and connected before counting.
    await Promise.all(names.slice(0, 50).map((ns) => store.feed.version(ns)))
    const before = await connections()
    const got = new Map<string, number[]>()
    const stops = names.map((ns) =>
      store.feed.subscribe(ns, (changes: Change[]) => {
        const seen = got.get(ns) ?? []
        for (const c of changes) seen.push(c.version)
        got.set(ns, seen)
      }),
    )
    t.teardown(() => {
      for (const s of stops) s()
    })
    // Let every poller start and every reader block.
    await new Promise((r) => setTimeout(r, 3000))
    const written = names.filter((_, i) => i % 100 === 0)
    for (const ns of written) await store.put(ns, 'k', Buffer.from('1'), {})
    for (let i = 0; i < 100 && written.some((ns) => !got.get(ns)?.length); i++)
      await new Promise((r) => setTimeout(r, 100))
    t.same(
      written.filter((ns) => got.get(ns)?.join() !== '1'),
      [],
      'each of 20 namespaces written got its change once',
    )
    const during = await connections()
    const more = during.map((n, i) => n - before[i]!)
    t.comment(`connections per master before ${before}, watching ${during}`)
    t.ok(
      more.every((n) => n <= 2),
      `at most two more per master (${more.join(', ')})`,
    )

    // Half stop watching, a new one starts: the readers go on with the rest.
    for (let i = 0; i < N; i += 2) stops[i]!()
    await store.createNamespace('feedconn-new')
    const fresh: number[] = []
    const stopFresh = store.feed.subscribe('feedconn-new', (c) =>
      fresh.push(...c.map((x) => x.version)),
    )
    t.teardown(stopFresh)
    await new Promise((r) => setTimeout(r, 1500))
    await store.put('feedconn-new', 'k', Buffer.from('1'), {})
    await store.put(names[1]!, 'k', Buffer.from('1'), {})
    for (let i = 0; i < 100 && (fresh.length === 0 || !got.get(names[1]!)); i++)
      await new Promise((r) => setTimeout(r, 100))
    t.same(fresh, [1], 'a namespace watched later gets its change')
    t.same(got.get(names[1]!), [1], 'one still watched gets its change')
    const after = (await connections()).map((n, i) => n - before[i]!)
    t.ok(
      after.every((n) => n <= 2),
      `still at most two more per master (${after.join(', ')})`,
    )
  })
}
