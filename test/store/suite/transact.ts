// Transactions beyond the entries suite's: gets and checks see the state before the
// transaction's writes, increments are exact past 2^53, a failed op writes nothing and is
// named by its index, and patch keeps what it does not change.
import type { Test } from 'tap'
import type { Store } from '../../../server/store/types.js'

const text = (b: Buffer | undefined) => b?.toString()

export async function transactSuite(t: Test, store: Store): Promise<void> {
  const ns = 'm/tx'
  t.equal(await store.createNamespace(ns), true)
  const first = await store.transact(ns, [
    { op: 'put', key: 'a', value: Buffer.from('1') },
    { op: 'put', key: 'b', value: Buffer.from('"x"'), metadata: Buffer.from('{"m":1}') },
    { op: 'get', key: 'a' },
  ])
  const [pa, pb, ga] = first.results as [
    { created: boolean; version: number },
    { created: boolean; version: number },
    { found: boolean },
  ]
  t.same([pa.created, pb.created], [true, true], 'both created')
  t.equal(pb.version, pa.version + 1, 'writes take consecutive versions')
  t.equal(first.version, pb.version, 'the answer carries the last write')
  t.equal(ga.found, false, 'a get sees the state before the writes')

  const big = 2n ** 60n
  const inc = await store.transact(ns, [
    { op: 'increment', key: 'a', by: big },
    { op: 'increment', key: 'n', by: -5n },
  ])
  const [ia, inn] = inc.results as [{ value: bigint }, { value: bigint; created: boolean }]
  t.equal(ia.value, big + 1n, 'an increment is exact past 2^53')
  t.equal(inn.value, -5n, 'a missing key starts at 0')
  t.equal(text((await store.get(ns, 'a'))?.value), String(big + 1n), 'and is stored as text')

  const before = await store.feed.version(ns)
  for (const [ops, code, index] of [
    [
      [
        { op: 'put', key: 'c', value: Buffer.from('1') },
        { op: 'check', key: 'a', version: 1 },
      ],
      'CONFLICT',
      1,
    ],
    [
      [
        { op: 'put', key: 'c', value: Buffer.from('1') },
        { op: 'increment', key: 'b', by: 1n },
      ],
      'NOT_A_NUMBER',
      1,
    ],
    [[{ op: 'delete', key: 'a', ifVersion: 1 }], 'CONFLICT', 0],
    [
      [
        { op: 'put', key: 'c', value: Buffer.from('1') },
        { op: 'put', key: 'a', value: Buffer.from('2'), ifVersion: null },
      ],
      'CONFLICT',
      1,
    ],
  ] as const) {
    const err = await store.transact(ns, ops as never).then(
      () => undefined,
      (e: { code?: string; index?: number }) => e,
    )
    t.equal(err?.code, code, `${ops.map((o) => o.op).join(', ')}: ${code}`)
    t.equal(err?.index, index, 'names the op that failed')
  }
  t.equal(await store.feed.version(ns), before, 'failed transactions wrote nothing')
  t.equal(await store.get(ns, 'c'), undefined, 'not even their first op')

  const patched = await store.transact(ns, [{ op: 'patch', key: 'b', ttlMs: 60_000 }])
  t.ok((patched.results[0] as { version: number }).version > before, 'a patch is a write')
  const b = await store.transact(ns, [{ op: 'get', key: 'b', metadata: true }])
  const got = b.results[0] as { found: true; value: Buffer; expiresAt?: number; metadata?: Buffer }
  t.equal(text(got.value), '"x"', 'a patch keeps the value')
  t.equal(text(got.metadata), '{"m":1}', 'and the metadata')
  t.ok(got.expiresAt !== undefined && got.expiresAt > Date.now(), 'and sets the expiry')
  const none = await store.transact(ns, [{ op: 'delete', key: 'absent' }])
  t.same(none.results[0], { deleted: false }, 'a delete of a missing key')
  t.equal(none.version, await store.feed.version(ns), 'writes nothing')
  t.equal(await store.dropNamespace(ns), true)
}
