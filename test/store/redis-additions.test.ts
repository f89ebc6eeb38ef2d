// The store seam's additions on a real Redis Cluster: metadata, listings with entries, the
// namespace's version and reverse order, transactions (all or nothing, exact integer
// arithmetic of any size, patches) and the change feed (history, live delivery, trimming).
import t from 'tap'
import { clusterFor } from '../helpers/redis-cluster.js'
import { openStore } from '../../server/store/open.js'
import type { Change, Store } from '../../server/store/types.js'

const b = (s: string) => Buffer.from(s)
const text = (x: Buffer | null | undefined) => (x == null ? x : x.toString())
const codeOf = async (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: { code?: string; index?: number }) => `${e.code} ${e.index}`,
  )
const until = async (ok: () => boolean, ms = 3000) => {
  const end = Date.now() + ms
  while (!ok() && Date.now() < end) await new Promise((r) => setTimeout(r, 20))
  return ok()
}

async function tests(store: Store): Promise<void> {
  await t.test('a new namespace is at version 0; versions start over after a drop', async (t) => {
    t.equal(await store.createNamespace('v/a'), true)
    t.equal((await store.list('v/a')).version, 0)
    t.equal(await store.feed.version('v/a'), 0)
    t.equal((await store.put('v/a', 'k', b('1'))).version, 1)
    t.equal((await store.put('v/a', 'k', b('2'))).version, 2)
    t.equal(await store.delete('v/a', 'missing'), false)
    t.equal((await store.list('v/a')).version, 2, 'a delete of nothing is no write')
    await store.dropNamespace('v/a')
    await store.createNamespace('v/a')
    t.equal((await store.list('v/a')).version, 0)
    t.equal((await store.put('v/a', 'k', b('1'))).version, 1)
    t.same(await store.feed.read('v/a', 0, 10), [
      { type: 'put', key: 'k', version: 1, value: b('1') },
    ])
  })

  await t.test('metadata', async (t) => {
    await store.createNamespace('m/a')
    await store.put('m/a', 'k', b('"v"'), { metadata: b('{"a":1}') })
    const e = await store.get('m/a', 'k')
    t.equal(text(e?.value), '"v"')
    t.equal(text(e?.metadata), '{"a":1}')
    await store.put('m/a', 'k', b('"w"'))
    t.equal((await store.get('m/a', 'k'))?.metadata, undefined, 'every put replaces it')
    t.same(await store.namespaceCounts('m/a'), { keys: 1, bytes: 4 }, 'metadata is not counted')
  })

  await t.test('an overwrite keeps counts exact and replaces expiry and metadata', async (t) => {
    await store.createNamespace('o/a')
    await store.put('o/a', 'k', b('"short"'), { ttlMs: 400, metadata: b('{"m":1}') })
    await store.put('o/a', 'j', b('1'))
    t.same(await store.namespaceCounts('o/a'), { keys: 2, bytes: 1 + 7 + 1 + 1 })
    // Longer, then shorter: bytes follow the value each time; the key count stays.
    await store.put('o/a', 'k', b('"a much longer value"'))
    t.same(await store.namespaceCounts('o/a'), { keys: 2, bytes: 1 + 21 + 1 + 1 })
    await store.put('o/a', 'k', b('2'), { ttlMs: 60_000 })
    t.same(await store.namespaceCounts('o/a'), { keys: 2, bytes: 1 + 1 + 1 + 1 })
    const e = await store.get('o/a', 'k')
    t.equal(text(e?.value), '2')
    t.equal(e?.metadata, undefined, 'the metadata went with the overwrite')
    t.ok(e?.expiresAt !== undefined, 'the new expiry is there')
    await store.put('o/a', 'k', b('3'), { metadata: b('{"n":2}') })
    t.equal((await store.get('o/a', 'k'))?.expiresAt, undefined, 'a put without ttl clears it')
    // The first expiry (400 ms) and the second (60 s) are both gone: the key outlives both.
    await new Promise((r) => setTimeout(r, 600))
    t.equal(text((await store.get('o/a', 'k'))?.metadata), '{"n":2}')
    t.same((await store.list('o/a')).keys, ['j', 'k'], 'the key keeps its one place in order')
    t.same(await store.namespaceCounts('o/a'), { keys: 2, bytes: 1 + 1 + 1 + 1 })
    t.same(
      (await store.feed.read('o/a', 0, 10)).map((c: Change) => `${c.type} ${c.key} ${c.version}`),
      ['put k 1', 'put j 2', 'put k 3', 'put k 4', 'put k 5'],
      'one change per put, nothing else',
    )
  })

  await t.test(
    'an overwrite that first reclaims an expired entry takes the version after it',
    async (t) => {
      await store.createNamespace('o/e')
      await store.put('o/e', 'gone', b('"soon"'), { ttlMs: 150 })
      await store.put('o/e', 'k', b('1'), { ttlMs: 60_000, metadata: b('{"m":1}') })
      await new Promise((r) => setTimeout(r, 300))
      // The overwrite of k removes 'gone' first (a delete at version 3), then is version 4.
      t.equal((await store.put('o/e', 'k', b('22'))).version, 4)
      t.same(await store.namespaceCounts('o/e'), { keys: 1, bytes: 1 + 2 })
      const e = await store.get('o/e', 'k')
      t.same([text(e?.value), e?.expiresAt, e?.metadata], ['22', undefined, undefined])
      t.same(
        (await store.feed.read('o/e', 0, 10)).map((c: Change) => `${c.type} ${c.key} ${c.version}`),
        ['put gone 1', 'put k 2', 'delete gone 3', 'put k 4'],
      )
      t.equal(
        (await store.put('o/e', 'k', b('3'))).version,
        5,
        'the counter holds what was written',
      )
      t.same((await store.list('o/e')).version, 5)
    },
  )

  await t.test(
    'a delete that first reclaims an expired entry takes the version after it',
    async (t) => {
      await store.createNamespace('d/e')
      await store.put('d/e', 'gone', b('"soon"'), { ttlMs: 150 })
      await store.put('d/e', 'k', b('"kept"'), { ttlMs: 60_000 })
      await store.put('d/e', 'j', b('1'))
      await new Promise((r) => setTimeout(r, 300))
      t.equal(await store.delete('d/e', 'k'), true)
      t.same(await store.namespaceCounts('d/e'), { keys: 1, bytes: 1 + 1 })
      t.same((await store.list('d/e')).keys, ['j'])
      t.same(
        (await store.feed.read('d/e', 0, 10)).map((c: Change) => `${c.type} ${c.key} ${c.version}`),
        ['put gone 1', 'put k 2', 'put j 3', 'delete gone 4', 'delete k 5'],
      )
      t.equal(await store.delete('d/e', 'k'), false, 'gone once')
      t.equal(
        (await store.put('d/e', 'k', b('2'))).version,
        6,
        'the counter holds what was written',
      )
      t.same(await store.namespaceCounts('d/e'), { keys: 2, bytes: 2 + 2 })
    },
  )

  await t.test('listings: entries, reverse, version, maxBytes', async (t) => {
    await store.createNamespace('l/a')
    for (const k of ['a', 'b', 'c', 'd', 'e'])
      await store.put('l/a', k, b(`"${k.repeat(10)}"`), {
        metadata: k === 'b' ? b('{"m":"b"}') : undefined,
        ttlMs: k === 'c' ? 60_000 : undefined,
      })
    const all = await store.list('l/a', { include: { values: true, metadata: true } })
    t.equal(all.version, 5)
    t.same(all.keys, ['a', 'b', 'c', 'd', 'e'])
    t.same(
      all.entries!.map((e) => [e.key, e.version, text(e.value), text(e.metadata)]),
      [
        ['a', 1, '"aaaaaaaaaa"', null],
        ['b', 2, '"bbbbbbbbbb"', '{"m":"b"}'],
        ['c', 3, '"cccccccccc"', null],
        ['d', 4, '"dddddddddd"', null],
        ['e', 5, '"eeeeeeeeee"', null],
      ],
    )
    t.ok(all.entries![2]!.expiresAt! > Date.now(), 'expiresAt listed')
    t.equal(all.next, undefined)
    const meta = await store.list('l/a', { include: { metadata: true }, limit: 2 })
    t.same(meta.keys, ['a', 'b'])
    t.equal(meta.entries![0]!.value, undefined, 'no values unless asked')
    t.equal(meta.next, 'b')
    const rev = await store.list('l/a', { reverse: true, limit: 2, after: 'd' })
    t.same(rev.keys, ['c', 'b'])
    t.equal(rev.next, 'b')
    t.same((await store.list('l/a', { reverse: true, after: 'b' })).keys, ['a'])
    // each value is 12 bytes: past 20 after the second
    const page = await store.list('l/a', { include: { values: true }, maxBytes: 20 })
    t.same(page.keys, ['a', 'b'])
    t.equal(page.next, 'b')
    const big = await store.list('l/a', { include: { values: true }, maxBytes: 1, reverse: true })
    t.same(big.keys, ['e'], 'never empty')
    const lastPage = await store.list('l/a', {
      include: { values: true },
      maxBytes: 20,
      after: 'c',
    })
    t.same(lastPage.keys, ['d', 'e'])
    t.equal(lastPage.next, undefined, 'no cursor when nothing remains')
  })

  await t.test('transactions: all or nothing, the failing index', async (t) => {
    await store.createNamespace('t/a')
    await store.put('t/a', 'x', b('"x"')) // 1
    await store.put('t/a', 'n', b('"text"')) // 2
    const before = await store.list('t/a', { include: { values: true } })
    t.equal(
      await codeOf(
        store.transact('t/a', [
          { op: 'put', key: 'p', value: b('1') },
          { op: 'check', key: 'x', version: 7 },
        ]),
      ),
      'CONFLICT 1',
    )
    t.equal(
      await codeOf(
        store.transact('t/a', [
          { op: 'put', key: 'p', value: b('1') },
          { op: 'delete', key: 'x' },
          { op: 'increment', key: 'n', by: 1n },
        ]),
      ),
      'NOT_A_NUMBER 2',
    )
    t.equal(
      await codeOf(store.transact('t/a', [{ op: 'patch', key: 'nope', ttlMs: 1000 }])),
      'KEY_NOT_FOUND 0',
    )
    t.equal(
      await codeOf(
        store.transact('t/a', [{ op: 'put', key: 'x', value: b('1'), ifVersion: null }]),
      ),
      'CONFLICT 0',
    )
    t.same(await store.list('t/a', { include: { values: true } }), before, 'nothing written')
    t.same(await store.feed.read('t/a', 2, 10), [], 'nothing in the feed')

    const r = await store.transact('t/a', [
      { op: 'check', key: 'x', version: 1 },
      { op: 'get', key: 'x', metadata: true },
      { op: 'put', key: 'x', value: b('"y"'), ifVersion: 1, metadata: b('{}') },
      { op: 'get', key: 'x' },
      { op: 'delete', key: 'gone' },
      { op: 'increment', key: 'c', by: 5n },
      { op: 'delete', key: 'n' },
      { op: 'get', key: 'absent' },
      { op: 'check', key: 'absent', version: null },
    ])
    t.equal(r.version, 5, 'three writes at 3, 4, 5')
    t.same(r.results, [
      {},
      { found: true, value: b('"x"'), version: 1, metadata: null },
      { created: false, version: 3 },
      { found: true, value: b('"x"'), version: 1 },
      { deleted: false },
      { value: 5n, version: 4 },
      { deleted: true },
      { found: false },
      {},
    ])
    const changes = (await store.feed.read('t/a', 2, 10)) as Change[]
    t.same(
      changes.map((c) => [c.type, c.key, c.version]),
      [
        ['put', 'x', 3],
        ['put', 'c', 4],
        ['delete', 'n', 5],
      ],
    )
    const ro = await store.transact('t/a', [{ op: 'get', key: 'c' }])
    t.equal(ro.version, 5, 'no writes: the current version')
    t.equal(
      await codeOf(
        store.transact('t/a', [
          { op: 'put', key: 'q', value: b('1') },
          { op: 'increment', key: 'q', by: 1n },
        ]),
      ),
      'INVALID_ARGUMENT 1',
      'a key written twice',
    )
  })

  await t.test('increments: exact at any size, concurrent, both signs', async (t) => {
    await store.createNamespace('i/a')
    await Promise.all(
      Array.from({ length: 50 }, () =>
        store.transact('i/a', [{ op: 'increment', key: 'c', by: 1n }]),
      ),
    )
    t.equal(text((await store.get('i/a', 'c'))?.value), '50')
    t.equal((await store.get('i/a', 'c'))?.version, 50, 'fifty writes')
    const inc = async (key: string, by: bigint) => {
      const r = await store.transact('i/a', [{ op: 'increment', key, by }])
      return (r.results[0] as { value: bigint }).value
    }
    const cases: [string, bigint][] = [
      ['9007199254740993', 1n],
      ['9007199254740992', -9007199254740993n],
      ['-999999999999999999999999999999', -1n],
      ['-1000000000000000000000000000000', 1n],
      ['1000000000', -1n],
      ['123456789012345678901234567890', -123456789012345678901234567890n],
      ['-5', 5n],
      ['-0', 7n],
      ['0', -1000000000000000000n],
      ['5', -123456789123456789123456789n],
    ]
    for (const [start, by] of cases) {
      await store.put('i/a', 'k', b(start))
      const got = await inc('k', by)
      const want = BigInt(start) + by
      t.equal(got, want, `${start} + ${by}`)
      t.equal(text((await store.get('i/a', 'k'))?.value), want.toString(), 'stored as text')
    }
    for (const bad of ['1.0', '1e3', '01', '"1"', '-', 'null', '+1']) {
      await store.put('i/a', 'k', b(bad))
      t.equal(await codeOf(inc('k', 1n)), 'NOT_A_NUMBER 0', bad)
    }
    t.equal(await inc('fresh', -3n), -3n, 'a missing key starts at 0')
  })

  await t.test('patch: increment, ttl, persist, metadata', async (t) => {
    await store.createNamespace('p/a')
    await store.put('p/a', 'k', b('10'), { metadata: b('{"a":1}'), ttlMs: 60_000 })
    const x = (await store.get('p/a', 'k'))!.expiresAt!
    let r = await store.transact('p/a', [{ op: 'patch', key: 'k', by: 2n }])
    t.same(r.results[0], { value: 12n, version: 2, created: false })
    let e = (await store.get('p/a', 'k'))!
    t.same(
      [text(e.value), e.version, e.expiresAt, text(e.metadata)],
      ['12', 2, x, '{"a":1}'],
      'keeps the rest',
    )
    r = await store.transact('p/a', [{ op: 'patch', key: 'k', persist: true, metadata: null }])
    t.same(r.results[0], { version: 3, created: false }, 'no value without by')
    e = (await store.get('p/a', 'k'))!
    t.same([text(e.value), e.version, e.expiresAt, e.metadata], ['12', 3, undefined, undefined])
    await store.transact('p/a', [{ op: 'patch', key: 'k', ttlMs: 300, metadata: b('{"b":2}') }])
    e = (await store.get('p/a', 'k'))!
    t.ok(e.expiresAt! > Date.now() && e.expiresAt! < Date.now() + 400, 'a new ttl')
    t.equal(text(e.metadata), '{"b":2}')
    t.equal(
      await codeOf(store.transact('p/a', [{ op: 'patch', key: 'k', persist: true, ifVersion: 3 }])),
      'CONFLICT 0',
    )
    r = await store.transact('p/a', [
      { op: 'patch', key: 'new', by: 4n, expiresAt: Date.now() + 60_000 },
    ])
    t.same(r.results[0], { value: 4n, version: 5, created: true })
    await new Promise((res) => setTimeout(res, 400))
    t.equal(await store.get('p/a', 'k'), undefined, 'expired')
    t.equal(
      await codeOf(store.transact('p/a', [{ op: 'patch', key: 'k', persist: true }])),
      'KEY_NOT_FOUND 0',
      'an expired key is missing',
    )
    const changes = (await store.feed.read('p/a', 5, 10)) as Change[]
    t.same(
      changes.map((c) => [c.type, c.key, c.version]),
      [['delete', 'k', 6]],
      'the expiry is a delete with its own version',
    )
  })

  await t.test('feed: live delivery in order, none twice', async (t) => {
    await store.createNamespace('f/a')
    await store.put('f/a', 'before', b('0'))
    const got: Change[] = []
    const stop = store.feed.subscribe('f/a', (c) => got.push(...c))
    const stop2 = store.feed.subscribe('f/a', () => {})
    const start = Date.now()
    await store.put('f/a', 'k', b('1'), { metadata: b('{"m":1}') })
    t.ok(await until(() => got.length >= 1), 'delivered')
    t.ok(Date.now() - start < 1000, `within a second (${Date.now() - start} ms)`)
    const writes = Array.from({ length: 40 }, (_, i) =>
      i % 3 === 0 ? store.delete('f/a', 'k') : store.put('f/a', `k${i % 5}`, b(String(i))),
    )
    await Promise.all(writes)
    await store.transact('f/a', [
      { op: 'put', key: 'b1', value: b('1') },
      { op: 'put', key: 'b2', value: b('2') },
    ])
    await store.transact('f/a', [
      { op: 'increment', key: 'ctr', by: 1n },
      { op: 'increment', key: 'ctr2', by: 1n },
    ])
    const top = await store.feed.version('f/a')
    t.ok(await until(() => got.at(-1)?.version === top), 'caught up')
    stop2()
    const versions = got.map((c) => c.version)
    t.same(
      versions,
      [...versions].sort((a, b) => a - b),
      'in version order',
    )
    const history = (await store.feed.read('f/a', 1, 1000)) as Change[]
    t.same(got, history, 'the same changes as the history, none twice')
    t.same(got[0], { type: 'put', key: 'k', version: 2, value: b('1'), metadata: b('{"m":1}') })
    t.same(
      got.filter((c) => c.key.startsWith('b')).map((c) => c.version),
      [top - 3, top - 2],
      "a transaction's changes take consecutive versions, in op order",
    )
    // read in short pages never splits a transaction
    const paged: Change[] = []
    let since = 1
    for (;;) {
      const page = (await store.feed.read('f/a', since, 1)) as Change[]
      if (page.length === 0) break
      paged.push(...page)
      since = page.at(-1)!.version
    }
    t.same(paged, history, 'paging from the last version misses nothing')
    stop()
    const n = got.length
    await store.put('f/a', 'after', b('1'))
    await new Promise((r) => setTimeout(r, 300))
    t.equal(got.length, n, 'nothing after unsubscribe')
    await store.dropNamespace('f/a')
    await t.rejects(store.feed.read('f/a', 0, 10), { code: 'NAMESPACE_NOT_FOUND' })
  })

  await t.test('feed: expiries are delivered as deletes within seconds', async (t) => {
    await store.createNamespace('f/x')
    const got: Change[] = []
    const stop = store.feed.subscribe('f/x', (c) => got.push(...c))
    await new Promise((r) => setTimeout(r, 200))
    await store.put('f/x', 'short', b('1'), { ttlMs: 200 })
    t.ok(
      await until(() => got.some((c) => c.type === 'delete' && c.key === 'short'), 8000),
      'an expiry is a delete',
    )
    stop()
  })

  await t.test('feed: trimming and expired history', async (t) => {
    await store.createNamespace('f/t')
    const N = 10_300
    // 10,300 single writes, 200 at a time
    for (let i = 0; i < N; i += 200)
      await Promise.all(
        Array.from({ length: Math.min(200, N - i) }, (_, j) =>
          store.put('f/t', `k${(i + j) % 50}`, b('1')),
        ),
      )
    const top = await store.feed.version('f/t')
    t.equal(top, N, 'every write a version')
    t.equal(await store.feed.read('f/t', 0, 10), 'expired', 'the oldest changes are gone')
    const tail = (await store.feed.read('f/t', top - 10_000, 20_000)) as Change[]
    t.ok(Array.isArray(tail), 'at least the last 10,000 remain')
    t.equal(tail.length, 10_000)
    t.equal(tail[0]!.version, top - 9_999)
    // find the floor: the first since that is not expired reads from the oldest kept change
    let lo = 0
    let hi = top - 10_000
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2)
      if ((await store.feed.read('f/t', mid, 1)) === 'expired') lo = mid + 1
      else hi = mid
    }
    const first = (await store.feed.read('f/t', lo, 1)) as Change[]
    t.equal(first[0]!.version, lo + 1, 'since just before the oldest kept change is fine')
    t.equal(await store.feed.read('f/t', lo - 1, 1), 'expired', 'one earlier is not')
    t.same(await store.feed.read('f/t', top, 10), [], 'nothing after the top')
  })

  await t.test('feed: trimmed also when every put takes two versions', async (t) => {
    // Each put after the first finds the last one's entry expired (a TTL of 0): a delete,
    // then the put, so every put's own version is odd and never a multiple of 32.
    await store.createNamespace('f/two')
    for (let i = 0; i < 5_200; i += 200)
      await Promise.all(
        Array.from({ length: 200 }, () => store.put('f/two', 'k', b('1'), { ttlMs: 0 })),
      )
    const top = await store.feed.version('f/two')
    t.equal(top, 1 + 2 * 5_199, 'after the first, a delete and a put each time')
    t.equal(
      await store.feed.read('f/two', top - 10_200, 1),
      'expired',
      'the feed holds no more than about 10,130 changes',
    )
    const tail = (await store.feed.read('f/two', top - 10_000, 20_000)) as Change[]
    t.equal(tail.length, 10_000, 'and at least the last 10,000')
  })
}

const cluster = await clusterFor(t)
if (cluster) {
  const store = await openStore({ dataDir: '', store: cluster.url, durability: 'always' })
  t.teardown(() => store.close())
  await tests(store)
}
