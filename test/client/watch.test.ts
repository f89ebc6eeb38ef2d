// watch() against a real server, as /work/shared/api-contract.md ("Watching changes")
// describes it: events in version order, listing then watching without a gap, resuming by
// itself after the server restarts (same port, same data), history_expired and watch_limit.
import net from 'node:net'
import t from 'tap'
import {
  HistoryExpiredError,
  type ReconnectEvent,
  type WatchEvent,
  WatchLimitError,
} from '../../client/src/index.js'
import { account, nsName, server } from './helpers.js'

/**
 * A port free right now, so a restarted server can listen where the client expects it. It is
 * taken from below the range the kernel hands out for outgoing connections (32768 and up), so
 * no connection made meanwhile takes it while the server is down.
 */
async function freePort(): Promise<number> {
  for (;;) {
    const port = 22000 + Math.floor(Math.random() * 10000)
    const srv = net.createServer()
    const ok = await new Promise<boolean>((r) => {
      srv.once('error', () => r(false))
      srv.listen(port, '127.0.0.1', () => r(true))
    })
    if (!ok) continue
    await new Promise((r) => srv.close(r))
    return port
  }
}

/** The next `n` events that pass `keep`, or a failure naming what did arrive after `ms`. */
async function take(
  it: AsyncIterator<WatchEvent>,
  n: number,
  opts: { ms?: number; keep?: (e: WatchEvent) => boolean } = {},
): Promise<WatchEvent[]> {
  const { ms = 10_000, keep = () => true } = opts
  const got: WatchEvent[] = []
  const deadline = Date.now() + ms
  while (got.length < n) {
    let timer: ReturnType<typeof setTimeout> | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`only ${got.length} of ${n} events: ${JSON.stringify(got, big)}`)),
        Math.max(0, deadline - Date.now()),
      )
    })
    try {
      const r = await Promise.race([it.next(), timeout])
      if (r.done) throw new Error(`the watch ended after ${JSON.stringify(got, big)}`)
      if (keep(r.value)) got.push(r.value)
    } finally {
      clearTimeout(timer)
    }
  }
  return got
}

const big = (_: string, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v)
const changes = (e: WatchEvent): boolean => e.type !== 'progress'
const next = (v: string, by = 1) => String(BigInt(v) + BigInt(by))

t.test('watch against a real server', async (t) => {
  const port = await freePort()
  const srv = await server(t, { args: ['--port', String(port)] })
  const { kv } = await account(srv)

  t.test('puts and deletes arrive in version order, under the prefix only', async (t) => {
    const ns = nsName('watch')
    await kv.createNamespace(ns)
    const it = kv.watch(ns, { prefix: 'w/' })
    t.teardown(() => it.return?.())
    t.same(await take(it, 1), [{ type: 'progress', version: '0' }], 'opens with progress')

    const a = await kv.put(ns, 'w/a', { n: 12345678901234567890n }, { metadata: { m: 1 } })
    await kv.put(ns, 'x/skip', 1)
    const b = await kv.put(ns, 'w/b', 'b', { ttl: 3600 })
    await kv.delete(ns, 'w/a')
    await kv.increment(ns, 'w/c', 5)
    const tx = await kv.transaction(ns).put('w/d', null).delete('w/b').put('x/no', 1).commit()
    await kv.deletePrefix(ns, 'w/')

    // w/a, w/b, w/a deleted, w/c, the transaction's two, and deletePrefix's two (w/c, w/d).
    const events = await take(it, 8, { keep: changes })
    t.same(events[0], {
      type: 'put',
      key: 'w/a',
      version: a.version,
      value: { n: 12345678901234567890n },
      metadata: { m: 1 },
    })
    t.match(events[1], { type: 'put', key: 'w/b', version: b.version, value: 'b' })
    t.type((events[1] as { expiresAt?: number }).expiresAt, 'number', 'expiresAt when set')
    t.same(events[2], { type: 'delete', key: 'w/a', version: next(b.version) })
    t.same(events[3], { type: 'put', key: 'w/c', version: next(b.version, 2), value: 5 })
    t.same(
      events.slice(4, 6),
      [
        { type: 'put', key: 'w/d', version: next(tx.version, -2), value: null },
        { type: 'delete', key: 'w/b', version: next(tx.version, -1) },
      ],
      "a transaction's writes at consecutive versions; x/no (its last) is not under the prefix",
    )
    t.same(
      events
        .slice(6)
        .map((e) => `${e.type} ${e.type === 'progress' ? '' : e.key}`)
        .sort(),
      ['delete w/c', 'delete w/d'],
      'deletePrefix: a delete per key',
    )
    const versions = events.map((e) => BigInt(e.version))
    t.ok(
      versions.every((v, i) => i === 0 || v > versions[i - 1]!),
      'versions only grow',
    )
  })

  t.test('list, then watch from its version: nothing is missed', async (t) => {
    const ns = nsName('listwatch')
    await kv.createNamespace(ns)
    await kv.put(ns, 'k1', 1)
    const page = await kv.list(ns)
    t.equal(page.version, '1')
    await kv.put(ns, 'k2', 2)
    await kv.delete(ns, 'k1')
    const it = kv.watch(ns, { since: page.version })
    t.teardown(() => it.return?.())
    const got = await take(it, 3)
    t.same(got, [
      { type: 'progress', version: '1' },
      { type: 'put', key: 'k2', version: '2', value: 2 },
      { type: 'delete', key: 'k1', version: '3' },
    ])
    await kv.put(ns, 'k3', 3)
    t.same(await take(it, 1, { keep: changes }), [
      { type: 'put', key: 'k3', version: '4', value: 3 },
    ])
  })

  t.test(
    'resumes by itself after the server restarts, missing and repeating nothing',
    async (t) => {
      const ns = nsName('restart')
      await kv.createNamespace(ns)
      const reconnects: ReconnectEvent[] = []
      const it = kv.watch(ns, { onReconnect: (e) => reconnects.push(e) })
      t.teardown(() => it.return?.())
      await take(it, 1)
      await kv.put(ns, 'before', 1)
      t.same(await take(it, 1, { keep: changes }), [
        { type: 'put', key: 'before', version: '1', value: 1 },
      ])

      await srv.restart()
      t.equal(srv.port, port, 'the same port')
      // Written before the watch is back: delivered from history.
      await kv.put(ns, 'after', 2)
      await kv.put(ns, 'after', 3)
      const got = await take(it, 2, { keep: changes, ms: 20_000 })
      t.same(got, [
        { type: 'put', key: 'after', version: '2', value: 2 },
        { type: 'put', key: 'after', version: '3', value: 3 },
      ])
      t.ok(reconnects.length >= 1, `it reconnected (${reconnects.length} attempts)`)
      t.equal(reconnects[0]?.since, '1', 'from the last version seen')

      await srv.kill()
      await srv.start()
      await kv.delete(ns, 'after')
      t.same(
        await take(it, 1, { keep: changes, ms: 20_000 }),
        [{ type: 'delete', key: 'after', version: '4' }],
        'and after a crash',
      )
    },
  )

  t.test('since older than the history: HistoryExpiredError', async (t) => {
    const ns = nsName('expired')
    await kv.createNamespace(ns)
    // The contract keeps at least the last 10,000 changes (or 64 MiB); write twice that.
    for (let round = 0; round < 20; round++) {
      const tx = kv.transaction(ns)
      for (let i = 0; i < 1000; i++) tx.put(`k${i}`, round)
      await tx.commit()
    }
    const page = await kv.list(ns, { limit: 1 })
    t.equal(page.version, '20000')
    const err = await take(kv.watch(ns, { since: '1' }), 1).catch((e) => e)
    t.ok(err instanceof HistoryExpiredError, `a HistoryExpiredError (${err})`)
    t.match(err, { status: 410, code: 'history_expired' })

    const recent = kv.watch(ns, { since: next(page.version, -100) })
    const got = await take(recent, 101)
    await recent.return?.()
    t.same(got[0], { type: 'progress', version: '19900' }, 'recent history is kept')
    t.same(got[100], { type: 'put', key: 'k999', version: '20000', value: 19 })
  })

  t.test('too many watches: WatchLimitError, not retried', async (t) => {
    const { kv: own } = await account(srv)
    const ns = nsName('limit')
    await own.createNamespace(ns)
    const open: AsyncIterator<WatchEvent>[] = []
    t.teardown(() => Promise.all(open.map((w) => w.return?.())))
    for (let i = 0; i < 5; i++) {
      const w = own.watch(ns)
      open.push(w)
      await take(w, 1)
    }
    const sixth = own.watch(ns)
    const err = await sixth.next().catch((e) => e)
    t.ok(err instanceof WatchLimitError, `the free plan's sixth watch: ${err}`)
    t.match(err, { status: 429, code: 'watch_limit', name: 'WatchLimitError' })

    await open.shift()!.return?.()
    let ok = false
    for (let i = 0; i < 20 && !ok; i++) {
      const w = own.watch(ns)
      ok = await take(w, 1, { ms: 2000 }).then(
        () => true,
        () => false,
      )
      if (ok) open.push(w)
      else await new Promise((r) => setTimeout(r, 100))
    }
    t.ok(ok, 'closing one frees a place')
  })
})
