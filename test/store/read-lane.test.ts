// The read lane (server/store/cluster/read-lane.ts): reads go to the slot's master on
// connections of their own, and whatever the lane cannot answer goes through ioredis. On a
// real Redis Cluster: the lane carries reads; a script cache emptied under it, a lane
// connection killed in the middle of reads and a master that stops answering for a while
// all end with every read answered rightly; a namespace dropped and made again elsewhere is
// read as the new one; the data's own refusals come through as the store's errors; with a
// user in the URL the lane signs in as that user.
import calculateSlot from 'cluster-key-slot'
import Redis, { Cluster } from 'ioredis'
import t from 'tap'
import { openRedisStore } from '../../server/store/cluster/index.js'
import { CALL_TIMEOUT_MS, LANE_NAME } from '../../server/store/cluster/read-lane.js'
import type { Store } from '../../server/store/types.js'
import { clusterFor } from '../helpers/redis-cluster.js'

const cluster = await clusterFor(t)
if (cluster) {
  const store: Store = await openRedisStore(cluster.url, { durability: 'always' })
  t.teardown(() => store.close())
  const admin = new Cluster([{ host: '127.0.0.1', port: cluster.nodes[0]!.port }])
  t.teardown(() => admin.quit())
  const masters = () => admin.nodes('master')
  /** The slot table as it is now, as the port of the master holding a key's slot. */
  const masterPorts = async () => {
    const slots = (await admin.cluster('SLOTS')) as [number, number, [string, number]][]
    return (key: string) => {
      const slot = calculateSlot(key)
      return slots.find(([from, to]) => slot >= from && slot <= to)![2][1]
    }
  }

  /** Lane connections on every master, with the command each ran last. */
  const laneClients = async () => {
    const out: { id: string; cmd: string; node: number; user: string }[] = []
    for (const m of masters()) {
      const list = String(await m.client('LIST'))
      for (const line of list.split('\n')) {
        if (!line.includes(`name=${LANE_NAME}`)) continue
        out.push({
          id: /\bid=(\d+)/.exec(line)![1]!,
          cmd: /\bcmd=(\S+)/.exec(line)![1]!,
          node: m.options.port!,
          user: /\buser=(\S+)/.exec(line)![1]!,
        })
      }
    }
    return out
  }

  const NS = 'lane'
  await store.createNamespace(NS)
  const values = new Map<string, string>()
  const versions = new Map<string, number>()
  for (let i = 0; i < 300; i++) {
    const key = `k${i}/${'é日'.repeat(i % 3)}`
    const value = JSON.stringify({ i, text: `värde ${i} 😀`, pad: 'x'.repeat(i) })
    versions.set(key, (await store.put(NS, key, Buffer.from(value))).version)
    values.set(key, value)
  }
  const keys = [...values.keys()]

  /** Reads every key at once; the keys whose value came back wrong, or that failed. */
  const readAll = async () => {
    const wrong: string[] = []
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        wrong.push('not all answered in 15 s')
        resolve()
      }, 15_000)
    })
    const all = Promise.all(
      keys.map(async (k) => {
        try {
          const got = await store.get(NS, k)
          if (got?.value.toString('utf8') !== values.get(k)) wrong.push(k)
        } catch (err) {
          wrong.push(`${k}: ${(err as Error).message}`)
        }
      }),
    )
    await Promise.race([all, late])
    clearTimeout(timer)
    return wrong
  }

  t.test('reads go by the lane, byte for byte', async (t) => {
    t.same(await readAll(), [], 'every value as written')
    const lane = await laneClients()
    t.ok(lane.length >= 1, `the lane holds ${lane.length} connection(s)`)
    t.ok(
      lane.some((c) => c.cmd === 'evalsha'),
      'the lane ran the reads',
    )
    const listed = await store.list(NS, { prefix: 'k1', limit: 1000 })
    t.same(
      listed.keys,
      keys
        .filter((k) => k.startsWith('k1'))
        .sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))),
      'a listing by the lane: keys as strings, in order',
    )
    const stat = await store.stat(NS, keys[7]!)
    t.equal(stat?.version, versions.get(keys[7]!), 'stat by the lane')
  })

  t.test('a namespace dropped and made again elsewhere: reads see the new one', async (t) => {
    const other: Store = await openRedisStore(cluster.url, { durability: 'always' })
    t.teardown(() => other.close())
    const text = (e: { value: Buffer } | undefined) => e?.value.toString('utf8')
    await store.createNamespace('again')
    await store.put('again', 'k', Buffer.from('"first"'))
    t.equal(text(await store.get('again', 'k')), '"first"', 'read once: its generation is known')
    t.equal(text(await store.get('again', 'k')), '"first"', 'and read by it')
    const old = await admin.hget('c:{n:again}:m', 'g')
    await other.dropNamespace('again')
    await other.createNamespace('again')
    // The old generation's entry left behind, as a sweep cut short by a crash would leave it.
    await admin.hset(`c:{n:again}:${old}:e:k`, 'v', '"stale"', 'n', '1')
    t.equal(await store.get('again', 'k'), undefined, 'made again: the old entry is not read')
    await other.put('again', 'k', Buffer.from('"second"'))
    t.equal(text(await store.get('again', 'k')), '"second"', 'the new one is')
    t.equal(text(await store.get('again', 'k')), '"second"', 'and stays so')
    await other.dropNamespace('again')
    const gone = await store.get('again', 'k').then(
      () => 'answered',
      (e: { code?: string }) => e.code,
    )
    t.equal(gone, 'NAMESPACE_NOT_FOUND', 'dropped on the other front end: refused here at once')
  })

  t.test(
    'the GETs of a namespace in one turn share one generation check, sent after them',
    async (t) => {
      await store.get(NS, keys[0]!)
      const port = (await masterPorts())(`c:{n:${NS}}:m`)
      const monitor = await masters()
        .find((m) => m.options.port === port)!
        .monitor()
      t.teardown(() => monitor.disconnect())
      const seen: string[] = []
      monitor.on('monitor', (_time: string, args: string[]) => {
        const name = String(args[0]).toLowerCase()
        if (name === 'hmget' || name === 'hget') seen.push(name)
      })
      const before = store.readLane!().calls
      const got = await Promise.all(keys.slice(0, 20).map((k) => store.get(NS, k)))
      t.same(
        got.map((e) => e?.version),
        keys.slice(0, 20).map((k) => versions.get(k)),
        'every GET answered with its entry',
      )
      t.equal(store.readLane!().calls - before, 21, 'in 20 entry reads and one check')
      // MONITOR reports a command as it runs; a PING after them is reported after them.
      await masters()
        .find((m) => m.options.port === port)!
        .ping()
      await new Promise((r) => setTimeout(r, 200))
      t.same(seen, [...Array(20).fill('hmget'), 'hget'], 'the check ran after every read')
    },
  )

  t.test('reads keep the lane when a bucket call goes to the same master', async (t) => {
    const masterOf = await masterPorts()
    const here = masterOf(`c:{n:${NS}}:m`)
    let id = 0
    while (masterOf(`c:{acct${id}}:bucket`) !== here) id++
    await readAll()
    const before = store.readLane!().calls
    const bucket = { ok: false, limit: 0, remaining: 0, reset: 0, retryAfter: 0 }
    // In one turn: a bucket call (never on the lane) and ten reads, all for one master.
    const [taken, ...got] = await Promise.all([
      store.limiter.take(`acct${id}`, 1000, 1000, Date.now(), bucket),
      ...keys.slice(0, 10).map((k) => store.get(NS, k)),
    ])
    t.equal((taken as typeof bucket).ok, true, 'the bucket answered')
    t.same(
      got.map((e) => (e as { value: Buffer }).value.toString('utf8')),
      keys.slice(0, 10).map((k) => values.get(k)),
      'the reads answered',
    )
    t.equal(
      store.readLane!().calls - before,
      11,
      'the reads went by the lane (ten and their check)',
    )
  })

  t.test("the data's refusals come through as the store's errors", async (t) => {
    const err = await store.get('no-such-namespace', 'k').then(
      () => undefined,
      (e: { code?: string }) => e,
    )
    t.equal(err?.code, 'NAMESPACE_NOT_FOUND')
  })

  t.test('an emptied script cache is loaded again, through ioredis', async (t) => {
    const before = { ...store.readLane!() }
    for (const m of masters()) await m.script('FLUSH')
    t.same(await readAll(), [], 'every read answered after SCRIPT FLUSH')
    // GETs of a namespace whose generation is known take no script; these do.
    const listed = await store.list(NS, { limit: 1000 })
    t.equal(listed.keys.length, keys.length, 'a listing answered after SCRIPT FLUSH')
    t.equal((await store.stat(NS, keys[9]!))?.version, versions.get(keys[9]!), 'and a stat')
    const after = store.readLane!()
    t.ok(after.calls > before.calls, 'the lane counts its calls')
    t.ok(after.rerouted > before.rerouted, `and the ones sent through ioredis (${after.rerouted})`)
  })

  t.test('a lane connection killed under reads: every read answered', async (t) => {
    await readAll()
    const before = await laneClients()
    // Scripts count as writes to CLIENT PAUSE WRITE: the reads wait on the masters, in flight,
    // while the lane's connections are killed under them.
    for (const m of masters()) await m.client('PAUSE', '500', 'WRITE')
    const reading = readAll()
    await new Promise((r) => setTimeout(r, 100))
    for (const c of before)
      await masters()
        .find((m) => m.options.port === c.node)!
        .client('KILL', 'ID', c.id)
    t.same(await reading, [], 'the reads in flight were answered')
    t.same(await readAll(), [], 'and the reads after')
    t.ok(store.readLane!().lost >= before.length, 'the lost connections are counted')
  })

  t.test('a master that stops answering: its reads go by ioredis, none is lost', async (t) => {
    // A connection lost a moment ago is rested a second before the lane connects again.
    await new Promise((r) => setTimeout(r, 1500))
    await readAll()
    const before = new Set((await laneClients()).map((c) => c.id))
    t.ok(before.size > 0, 'the lane is connected before the pause')
    const pause = CALL_TIMEOUT_MS + 1500
    for (const m of masters()) await m.client('PAUSE', String(pause), 'ALL')
    const started = Date.now()
    const wrong = await readAll()
    t.same(wrong, [], 'every read answered rightly')
    t.ok(Date.now() - started >= pause - 200, 'after the pause')
    await readAll()
    const after = (await laneClients()).map((c) => c.id)
    t.ok(
      after.every((id) => !before.has(id)),
      'the lane gave up its connection to the quiet master and made a new one',
    )
  })

  t.test('with a user and password in the URL the lane signs in as that user', async (t) => {
    for (const n of cluster.nodes) {
      const node = new Redis(n.port, '127.0.0.1')
      await node.acl('SETUSER', 'lane', 'on', '>lane-pass', '~*', '&*', '+@all')
      await node.quit()
    }
    const url = cluster.url.replace('redis://', 'redis://lane:lane-pass@')
    const signed: Store = await openRedisStore(url, { durability: 'always' })
    t.teardown(() => signed.close())
    for (let i = 0; i < 20; i++) {
      const got = await signed.get(NS, keys[i]!)
      if (got?.value.toString('utf8') !== values.get(keys[i]!)) t.fail(`${keys[i]} read wrong`)
    }
    const mine = (await laneClients()).filter((c) => c.user === 'lane')
    t.ok(mine.length >= 1, `the lane's connections are the user's (${mine.length})`)
  })

  t.test(
    'through ioredis, a GET during a slot migration finds an entry not moved yet',
    async (t) => {
      const ns = 'moving'
      await store.createNamespace(ns)
      await store.put(ns, 'k', Buffer.from('"here"'))
      const text = (e: { value: Buffer } | undefined) => e?.value.toString('utf8')
      t.equal(text(await store.get(ns, 'k')), '"here"', 'read once: its generation is known')
      const metaKey = `c:{n:${ns}}:m`
      const slot = calculateSlot(metaKey)
      const fromPort = (await masterPorts())(metaKey)
      const from = masters().find((m) => m.options.port === fromPort)!
      const to = masters().find((m) => m.options.port !== fromPort)!
      const fromId = String(await from.cluster('MYID'))
      const toId = String(await to.cluster('MYID'))
      await to.cluster('SETSLOT', slot, 'IMPORTING', fromId)
      await from.cluster('SETSLOT', slot, 'MIGRATING', toId)
      // The namespace's meta hash moves first: its HGET now meets ASK, the entry's HMGET not.
      await from.migrate('127.0.0.1', to.options.port!, metaKey, 0, 5000)
      // The lane rests a moment after losing its connection to that master: ioredis reads.
      const lost = store.readLane!().lost
      for (const c of await laneClients())
        if (c.node === fromPort) await from.client('KILL', 'ID', c.id)
      while (store.readLane!().lost === lost) await new Promise((r) => setTimeout(r, 5))
      const laned = store.readLane!().calls
      t.equal(text(await store.get(ns, 'k')), '"here"', 'the entry is found, not "not found"')
      t.equal(store.readLane!().calls, laned, 'and ioredis read it, not the lane')
      // The rest of the slot moves, and both masters agree where it is.
      for (;;) {
        const left = (await from.cluster('GETKEYSINSLOT', slot, 100)) as string[]
        if (left.length === 0) break
        for (const k of left) await from.migrate('127.0.0.1', to.options.port!, k, 0, 5000)
      }
      await to.cluster('SETSLOT', slot, 'NODE', toId)
      await from.cluster('SETSLOT', slot, 'NODE', toId)
      t.equal(text(await store.get(ns, 'k')), '"here"', 'and after the move')
    },
  )
}
