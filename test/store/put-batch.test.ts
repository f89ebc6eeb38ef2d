// The PUTs and DELETEs of one turn to one namespace go to Redis as one script call
// (commands.ts, coalesced; entry-scripts.ts, WRITES). On a real 3+3 cluster: each write is
// applied in the order it came, at the next version, and answered on its own (a failed
// condition fails only its write); a delete between PUTs keeps its place and its batch; the feed holds each acknowledged write
// once, at the version its answer gave, and nothing of a refused one. Through the store
// (one turn for certain) and through the HTTP API (concurrent requests).
import { createHash } from 'node:crypto'
import Redis from 'ioredis'
import t, { type Test } from 'tap'
import { openRedisStore } from '../../server/store/cluster/index.js'
import { WRITES } from '../../server/store/cluster/entry-scripts.js'
import { meta } from '../../server/store/cluster/entries.js'
import type { Change, Store } from '../../server/store/types.js'
import { plansFile } from '../helpers/plans.js'
import { clusterFor } from '../helpers/redis-cluster.js'
import { startServer } from '../helpers/server.js'
import { Client } from '../server/contract/http.js'
import { watch } from '../server/contract/sse.js'

const WRITES_SHA = createHash('sha1').update(WRITES).digest('hex')

/** Every change of `ns` after `since`, read page by page. */
async function history(store: Store, ns: string, since: number): Promise<Change[]> {
  const all: Change[] = []
  for (let last = since; ; ) {
    const page = await store.feed.read(ns, last, 1000)
    if (page === 'expired') throw new Error('history expired')
    if (page.length === 0) return all
    all.push(...page)
    last = page[page.length - 1]!.version
  }
}

/** Asks the master of `ns`'s slot. */
async function onMaster<T>(
  cluster: { nodes: { port: number }[] },
  ns: string,
  ask: (master: Redis) => Promise<T>,
): Promise<T> {
  const any = new Redis({ port: cluster.nodes[0]!.port })
  try {
    const slot = Number(await any.cluster('KEYSLOT', meta(ns)))
    const ranges = (await any.cluster('SLOTS')) as [number, number, [string, number]][]
    const port = ranges.find(([from, to]) => slot >= from && slot <= to)![2][1]
    const master = new Redis({ port })
    try {
      return await ask(master)
    } finally {
      master.disconnect()
    }
  } finally {
    any.disconnect()
  }
}

/** Whether the master of `ns`'s slot has run a WRITES (its script is loaded only when called). */
const batched = (cluster: { nodes: { port: number }[] }, ns: string) =>
  onMaster(cluster, ns, async (m) => ((await m.script('EXISTS', WRITES_SHA)) as number[])[0] === 1)

/** Script calls (EVALSHA) the master of `ns`'s slot has answered since it started. */
const scriptCalls = (cluster: { nodes: { port: number }[] }, ns: string) =>
  onMaster(cluster, ns, async (m) =>
    Number(/cmdstat_evalsha:calls=(\d+)/.exec(String(await m.info('commandstats')))?.[1] ?? 0),
  )

const cluster = await clusterFor(t)
if (cluster) {
  t.test('one turn of PUTs to a namespace: in order, each answered on its own', async (t: Test) => {
    const store = await openRedisStore(cluster.url, { durability: 'always' })
    t.teardown(() => store.close())
    const ns = 'batch-store'
    await store.createNamespace(ns)
    const c0 = await store.put(ns, 'c', Buffer.from('"c0"'))
    const value = (s: string) => Buffer.from(JSON.stringify(s))
    // All asked in this turn: one batch, the delete in its place.
    const asked: { key: string; v: string; p: Promise<unknown> }[] = []
    const put = (key: string, v: string, ifVersion?: number | null) =>
      asked.push({ key, v, p: store.put(ns, key, value(v), { ifVersion }) })
    put('a', 'a1')
    put('c', 'c1', c0.version) // holds: c is at c0
    put('c', 'c2', c0.version) // fails: c1 moved it on
    put('n', 'n1', null) // holds: n absent
    put('n', 'n2', null) // fails: n now there
    put('a', 'a2')
    const del = store.delete(ns, 'a')
    put('a', 'a3', null) // holds: the delete came first
    put('z', 'z1')
    const settled = await Promise.allSettled(asked.map((x) => x.p))
    t.equal(await del, true, 'the delete between them found a2')
    const codes = settled.map((s) =>
      s.status === 'fulfilled' ? 'ok' : String((s.reason as { code?: string }).code),
    )
    t.same(codes, ['ok', 'ok', 'CONFLICT', 'ok', 'CONFLICT', 'ok', 'ok', 'ok'], 'per-write results')
    const versions = settled.flatMap((s) =>
      s.status === 'fulfilled' ? [(s.value as { version: number }).version] : [],
    )
    const b = c0.version
    // a1, c1, n1, a2 at b+1..b+4, the delete at b+5, a3 and z1 after it.
    t.same(versions, [b + 1, b + 2, b + 3, b + 4, b + 6, b + 7], 'consecutive versions, in order')
    t.same(
      settled.map((s) =>
        s.status === 'fulfilled' ? (s.value as { created: boolean }).created : null,
      ),
      [true, false, null, true, null, false, true, true],
      'created as each write found its key',
    )
    const feed = await history(store, ns, b)
    t.same(
      feed.map((c) => `${c.version} ${c.type} ${c.key} ${c.value?.toString() ?? ''}`),
      [
        `${b + 1} put a "a1"`,
        `${b + 2} put c "c1"`,
        `${b + 3} put n "n1"`,
        `${b + 4} put a "a2"`,
        `${b + 5} delete a `,
        `${b + 6} put a "a3"`,
        `${b + 7} put z "z1"`,
      ],
      'the feed holds each acknowledged write once at its version, nothing of a refused one',
    )
    t.equal((await store.get(ns, 'c'))?.value.toString(), '"c1"', 'c kept the write that held')
    t.equal((await store.get(ns, 'n'))?.value.toString(), '"n1"', 'n kept the first')
    const counts = await store.namespaceCounts(ns)
    t.equal(counts?.keys, 4, 'four keys counted (a, c, n, z)')
    // Each of the four: a one-byte key and a four-byte value ("a3", "c1", "n1", "z1").
    t.equal(counts?.bytes, 4 * 5, 'bytes counted as each write left them')
    t.ok(await batched(cluster, ns), 'the writes went as a batch (WRITES ran on the master)')
  })

  t.test('one turn of DELETEs and PUTs to a namespace: one script call, in order', async (t) => {
    const store = await openRedisStore(cluster.url, { durability: 'always' })
    t.teardown(() => store.close())
    const ns = 'batch-deletes'
    await store.createNamespace(ns)
    const value = (s: string) => Buffer.from(JSON.stringify(s))
    const a = await store.put(ns, 'a', value('a0'))
    await store.put(ns, 'b', value('b0'))
    // A batch first, so that its script is loaded on the master (a NOSCRIPT counts a call).
    await Promise.all([store.delete(ns, 'missing'), store.delete(ns, 'missing')])
    const before = await scriptCalls(cluster, ns)
    const asked = [
      store.delete(ns, 'a', { ifVersion: a.version + 5 }), // fails: a is at a0
      store.delete(ns, 'a'),
      store.delete(ns, 'a'), // finds none: the one before took it
      store.put(ns, 'a', value('a1'), { ifVersion: null }), // holds: a is gone
      store.delete(ns, 'b'),
      store.delete(ns, 'missing'),
    ]
    const settled = await Promise.allSettled(asked)
    t.equal((await scriptCalls(cluster, ns)) - before, 1, 'six writes, one script call')
    t.same(
      settled.map((s) =>
        s.status === 'rejected'
          ? String((s.reason as { code?: string }).code)
          : typeof s.value === 'boolean'
            ? s.value
            : (s.value as { version: number }).version - a.version,
      ),
      ['CONFLICT', true, false, 3, true, false],
      'each answered on its own; the put at the version after the delete, b after it',
    )
    const feed = await history(store, ns, a.version + 1)
    t.same(
      feed.map((c) => `${c.version - a.version} ${c.type} ${c.key}`),
      ['2 delete a', '3 put a', '4 delete b'],
      'the feed holds each write that changed something once, in order',
    )
    const counts = await store.namespaceCounts(ns)
    t.equal(counts?.keys, 1, 'one key left (a)')
    t.equal(counts?.bytes, 1 + 4, 'bytes counted as the writes left them')
  })

  t.test(
    'concurrent PUTs over HTTP, some conditions failing: each answered, the feed in order',
    async (t: Test) => {
      const a = await startServer({ plans: plansFile(), args: ['--store', cluster.url] })
      t.teardown(() => a.stop())
      const acct = await a.createAccount()
      const api = new Client(a.baseUrl, acct.apiKey)
      await api.createNamespace('h')
      const since = Number(await api.mustPut('h', 'c', 0))
      type Sent = { key: string; value: string; status: number; version?: number }
      const sent: Sent[] = []
      for (let round = 0; round < 5; round++) {
        const cv = (await api.get('/h/c')).headers.etag
        const reqs: Promise<Sent>[] = []
        for (let i = 0; i < 36; i++) {
          const kind = i % 3
          const key = kind === 0 ? `n${round}-${i}` : kind === 1 ? 'c' : `once${round}-${i % 4}`
          const value = `${round}:${i}`
          const headers: Record<string, string> =
            kind === 1 ? { 'if-match': String(cv) } : kind === 2 ? { 'if-none-match': '*' } : {}
          reqs.push(
            api.put(`/h/${key}`, { value }, { headers }).then((res) => ({
              key,
              value,
              status: res.status,
              version: res.status < 300 ? Number(res.json.version) : undefined,
            })),
          )
        }
        const got = await Promise.all(reqs)
        sent.push(...got)
        const onC = got.filter((s) => s.key === 'c')
        t.same(
          [onC.filter((s) => s.status === 200).length, onC.filter((s) => s.status === 412).length],
          [1, onC.length - 1],
          `round ${round}: one If-Match write to c holds, the others are 412`,
        )
        for (let k = 0; k < 4; k++) {
          const once = got.filter((s) => s.key === `once${round}-${k}`)
          t.same(
            once.map((s) => s.status).sort(),
            [201, ...Array(once.length - 1).fill(412)],
            `round ${round}: one If-None-Match write to once${round}-${k} creates it`,
          )
        }
        t.same(
          got.filter((s) => s.key.startsWith('n')).map((s) => s.status),
          Array(12).fill(201),
          `round ${round}: every unconditional write is acknowledged`,
        )
      }
      const acked = sent.filter((s) => s.version !== undefined)
      const byVersion = new Map(acked.map((s) => [s.version!, s]))
      t.equal(byVersion.size, acked.length, 'every acknowledged write has a version of its own')
      const w = await watch(a.baseUrl, `/h?watch=1&since=${since}`, acct.apiKey)
      t.teardown(() => w.close())
      const events = (await w.until(acked.length + 1, 20_000)).slice(1)
      t.same(
        events.map((e) => Number(e.id)),
        events.map((_, i) => since + 1 + i),
        'the feed at consecutive versions',
      )
      const wrong = events.filter((e) => {
        const s = byVersion.get(Number(e.id))
        return (
          s === undefined ||
          s.key !== e.data.key ||
          JSON.stringify(s.value) !== JSON.stringify(e.data.value)
        )
      })
      t.same(wrong, [], 'each change is the write its answer gave that version to')
      t.ok(
        await batched(cluster, `u/${acct.accountId}/h`),
        'the concurrent PUTs went as batches (WRITES ran on the master)',
      )
    },
  )
}
