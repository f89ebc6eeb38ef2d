// The client's methods for the API's additions (metadata, PATCH and increments, transactions,
// entry listings, reverse order, the namespace's version, deleting by prefix) against a real
// server, as /work/shared/api-contract.md ("Additions") describes them.
import t from 'tap'
import {
  AuthError,
  BadRequestError,
  Cairn,
  ConflictError,
  InvalidMetadataError,
  InvalidPatchError,
  InvalidPrefixError,
  InvalidTransactionError,
  NotANumberError,
  NotFoundError,
} from '../../client/src/index.js'
import { account, cliKey, nsName, server } from './helpers.js'

const big = (v: string) => BigInt(v)
const next = (v: string, by = 1) => String(BigInt(v) + BigInt(by))

t.test('the additions against a real server', async (t) => {
  const srv = await server(t)
  const { kv, email } = await account(srv)

  t.test('metadata: put, getWithMetadata, replaced by every put', async (t) => {
    const ns = nsName('meta')
    await kv.createNamespace(ns)
    const meta = { owner: 'ada', id: 12345678901234567890n, tags: ['a'] }
    const put = await kv.put(ns, 'k', { v: 1 }, { metadata: meta, ttl: 3600 })
    const hit = await kv.getWithMetadata<{ v: number }>(ns, 'k')
    t.same(hit?.value, { v: 1 })
    t.same(hit?.metadata, meta, 'metadata round trip, a big integer in it exact')
    t.equal(hit?.version, put.version, 'the version from the ETag')
    t.ok(hit?.expiresAt !== undefined && hit.expiresAt > Date.now() / 1000, 'X-Expires-At read')
    t.same(
      await kv.get(ns, 'k'),
      { value: { v: 1 }, version: put.version, expiresAt: hit?.expiresAt },
      'a plain get still answers the value alone',
    )

    await kv.put(ns, 'k', 2)
    t.equal((await kv.getWithMetadata(ns, 'k'))?.metadata, null, 'a put without metadata clears it')
    await kv.put(ns, 'k', 3, { metadata: { a: 1 } })
    await kv.put(ns, 'k', 4, { metadata: null })
    t.equal((await kv.getWithMetadata(ns, 'k'))?.metadata, null, 'null means none')
    t.equal(await kv.getWithMetadata(ns, 'missing'), null, 'a missing key is null')
    await t.rejects(kv.getWithMetadata(nsName('nope'), 'k'), NotFoundError)

    await kv.putRaw(ns, 'raw', '{"x":1.50}', { metadata: { m: true } })
    t.same((await kv.getWithMetadata(ns, 'raw'))?.metadata, { m: true }, 'putRaw takes metadata')

    const before = await kv.get(ns, 'k')
    await t.rejects(
      kv.put(ns, 'k', 5, { metadata: { s: 'x'.repeat(1100) } }),
      { name: 'InvalidMetadataError', status: 400, code: 'invalid_metadata' },
      'more than 1 KiB is refused before sending',
    )
    await t.rejects(kv.put(ns, 'k', 5, { metadata: [1, 2] as any }), InvalidMetadataError)
    await t.rejects(kv.put(ns, 'k', 5, { metadata: 'text' as any }), InvalidMetadataError)
    t.same(await kv.get(ns, 'k'), before, 'nothing was written')
    // 1 KiB exactly is allowed: {"s":"..."} with 1016 characters of text.
    await kv.put(ns, 'k', 6, { metadata: { s: 'y'.repeat(1016) } })
    t.equal((await kv.getWithMetadata<number, { s: string }>(ns, 'k'))?.metadata?.s.length, 1016)
  })

  t.test('patch and increment', async (t) => {
    const ns = nsName('patch')
    await kv.createNamespace(ns)

    const made = await kv.patch(ns, 'c', { increment: 5 })
    t.same(made, { created: true, version: made.version, value: 5n }, 'a missing key starts at 0')
    t.equal((await kv.get(ns, 'c'))?.version, made.version)
    const again = await kv.patch(ns, 'c', { increment: -7 })
    t.equal(again.created, false)
    t.equal(again.value, -2n)
    t.equal(again.version, next(made.version), 'a new version per write')
    t.equal(await kv.increment(ns, 'c'), -1n, 'increment by 1 by default')

    await kv.putRaw(ns, 'big', '9007199254740991')
    t.equal(await kv.increment(ns, 'big', 2), 9007199254740993n, 'past 2^53, exact')
    t.equal((await kv.getRaw(ns, 'big'))?.raw, '9007199254740993', 'stored exactly')
    t.equal(
      await kv.increment(ns, 'big', '100000000000000000000000000000'),
      100000000000009007199254740993n,
      'a decimal string of any size',
    )
    t.equal(
      await kv.increment(ns, 'big', -100000000000009007199254740993n),
      0n,
      'a negative bigint',
    )
    t.equal(await kv.increment(ns, 'small', 3), 3n, 'always a bigint, small ones too')

    for (const [text, what] of [
      ['1.0', 'a decimal'],
      ['1e3', 'an exponent'],
      ['"3"', 'a string'],
      ['{"n":1}', 'an object'],
      ['null', 'null'],
    ] as const) {
      await kv.putRaw(ns, 'nan', text)
      const err = await kv.increment(ns, 'nan').catch((e) => e)
      t.ok(err instanceof NotANumberError, `${what}: NotANumberError (${err})`)
      t.ok(err instanceof ConflictError, 'a kind of ConflictError')
      t.match(err, { status: 409, code: 'not_a_number', name: 'NotANumberError' })
      t.equal((await kv.getRaw(ns, 'nan'))?.raw, text, 'left as it was')
    }

    for (const by of [1.5, 2 ** 60, Number.NaN, '1e3', '1.0', '+1', '01', '', 'x']) {
      await t.rejects(
        kv.increment(ns, 'c', by),
        { name: 'InvalidPatchError', code: 'invalid_patch', status: 400 },
        `increment by ${String(by)} is refused before sending`,
      )
    }
    await t.rejects(kv.patch(ns, 'c', {}), InvalidPatchError, 'an empty patch')
    await t.rejects(
      kv.patch(ns, 'c', { ttl: 10, persist: true }),
      { name: 'InvalidPatchError', code: 'invalid_patch' },
      'ttl and persist together: the server says invalid_patch',
    )
    await t.rejects(
      kv.patch(ns, 'c', { ttl: 0 }),
      { name: 'BadRequestError', code: 'invalid_ttl' },
      'a ttl PUT would refuse',
    )
    await t.rejects(
      kv.patch(ns, 'absent', { ttl: 10 }),
      { name: 'NotFoundError', code: 'key_not_found' },
      'without increment a missing key is 404',
    )

    // Expiry and metadata change without rewriting the value.
    const put = await kv.put(ns, 'e', { keep: 12345678901234567890n })
    const now = Math.floor(Date.now() / 1000)
    const ttl = await kv.patch(ns, 'e', { ttl: 100 })
    t.same(ttl, { created: false, version: next(put.version) }, 'no value without increment')
    const withTtl = await kv.get<any>(ns, 'e')
    t.equal(withTtl?.value.keep, 12345678901234567890n, 'value untouched')
    t.ok(withTtl!.expiresAt! >= now + 99 && withTtl!.expiresAt! <= now + 102, 'ttl set')
    await kv.patch(ns, 'e', { expiresAt: new Date((now + 500) * 1000) })
    t.equal((await kv.get(ns, 'e'))?.expiresAt, now + 500, 'expiresAt from a Date')
    await kv.patch(ns, 'e', { persist: true })
    t.equal((await kv.get(ns, 'e'))?.expiresAt, undefined, 'persist removes it')
    await kv.patch(ns, 'e', { metadata: { tag: 'x' } })
    t.same((await kv.getWithMetadata(ns, 'e'))?.metadata, { tag: 'x' })
    await kv.patch(ns, 'e', { metadata: null })
    t.equal((await kv.getWithMetadata(ns, 'e'))?.metadata, null, 'metadata null removes it')
    await t.rejects(kv.patch(ns, 'e', { metadata: [] as any }), InvalidMetadataError)

    const cur = (await kv.get(ns, 'c'))!.version
    await t.rejects(
      kv.patch(ns, 'c', { increment: 1, ifMatch: next(cur, 100) }),
      { name: 'ConflictError', status: 412, code: 'precondition_failed' },
      'ifMatch holds for patches too',
    )
    await t.rejects(kv.increment(ns, 'c', 1, { ifMatch: `0${cur}` }), {
      code: 'precondition_failed',
    })
    const ok = await kv.patch(ns, 'c', { increment: 1, ifMatch: `"${cur}"` })
    t.equal(ok.value, 0n, 'a matching version (quoted too) applies')
  })

  t.test('50 concurrent increments add 50', async (t) => {
    const ns = nsName('race')
    await kv.createNamespace(ns)
    await kv.putRaw(ns, 'hits', '9007199254740990')
    const results = await Promise.all(Array.from({ length: 50 }, () => kv.increment(ns, 'hits')))
    t.equal((await kv.getRaw(ns, 'hits'))?.raw, '9007199254741040', 'exactly +50')
    t.same(
      results.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)),
      Array.from({ length: 50 }, (_, i) => 9007199254740991n + BigInt(i)),
      'each saw its own result',
    )
  })

  t.test('transactions: a typed builder, all ops applied together', async (t) => {
    const ns = nsName('tx')
    await kv.createNamespace(ns)
    const x = await kv.put(ns, 'x', 1, { ttl: 3600 })
    await kv.put(ns, 'g', 'old', { metadata: { m: 1 } })
    await kv.putRaw(ns, 'n', '9007199254740992')
    const base = (await kv.list(ns)).version
    t.equal(base, next(x.version, 2), 'versions count the writes')

    const tx = kv
      .transaction(ns)
      .check('x', x.version)
      .check('nope', null)
      .get('x')
      .get<string>('g', { metadata: true })
      .get('nope')
      .put('y', { a: 12345678901234567890n }, { metadata: { by: 'tx' } })
      .put('g', 'new')
      .increment('n', 2)
      .increment('fresh', '-5')
      .delete('x', { ifMatch: x.version })
      .delete('absent')
    t.equal(tx.size, 11)
    const { version, results } = await tx.commit()
    const [check1, check2, getX, getG, getNope, putY, putG, incN, incFresh, delX, delAbsent] =
      results
    t.same(check1, {})
    t.same(check2, {})
    t.equal(getX.found, true)
    if (getX.found) {
      t.equal(getX.value, 1)
      t.equal(getX.version, x.version)
      t.type(getX.expiresAt, 'number', 'expiresAt of a key with a TTL')
      t.equal(getX.metadata, undefined, 'no metadata when not asked')
    }
    t.same(
      getG,
      { found: true, value: 'old', version: getG.found ? getG.version : '', metadata: { m: 1 } },
      'get reads the state before the writes, metadata when asked',
    )
    t.same(getNope, { found: false })
    t.same(putY, { created: true, version: next(base, 1) }, 'writes at consecutive versions')
    t.same(putG, { created: false, version: next(base, 2) })
    t.same(incN, { value: 9007199254740994n, version: next(base, 3) }, 'exact increment')
    t.same(incFresh, { value: -5n, version: next(base, 4) })
    t.same(delX, { deleted: true })
    t.same(delAbsent, { deleted: false }, 'a missing key deletes as false')
    t.equal(version, next(base, 5), "the answer's version is the last write's")

    t.equal(await kv.get(ns, 'x'), null)
    t.same((await kv.getWithMetadata(ns, 'y'))?.metadata, { by: 'tx' })
    t.equal((await kv.getRaw(ns, 'n'))?.raw, '9007199254740994')
    t.equal((await kv.list(ns)).version, version, 'the delete of a missing key wrote nothing')

    const reads = await kv.transaction(ns).get('g').check('y', next(base, 1)).commit()
    t.equal(reads.version, version, "a read-only transaction answers the namespace's version")
    t.same(reads.results[0], { found: true, value: 'new', version: next(base, 2) })

    // A loop fills a builder too.
    const batch = kv.transaction(ns)
    for (let i = 0; i < 10; i++) batch.put(`batch/${i}`, i)
    const done = await batch.commit()
    t.equal(done.results.length, 10)
    t.equal((await kv.list(ns, { prefix: 'batch/' })).keys.length, 10)
  })

  t.test('transactions: a failed op names its index and nothing is applied', async (t) => {
    const ns = nsName('txfail')
    await kv.createNamespace(ns)
    const a = await kv.put(ns, 'a', 'text')
    const before = (await kv.list(ns)).version

    const fails = async (
      tx: { commit(): Promise<unknown> },
      cls: abstract new (...args: never) => unknown,
      match: Record<string, unknown>,
      what: string,
    ) => {
      const err = await tx.commit().then(
        () => undefined,
        (e) => e,
      )
      t.ok(err instanceof cls, `${what}: a ${cls.name} (got ${err})`)
      t.match(err, match, what)
      t.equal((await kv.list(ns)).version, before, `${what}: nothing applied`)
    }
    await fails(
      kv.transaction(ns).put('b', 1).check('a', next(a.version, 5)).put('c', 1),
      ConflictError,
      { status: 412, code: 'precondition_failed', index: 1 },
      'a failed check',
    )
    await fails(
      kv.transaction(ns).put('b', 1).check('a', null),
      ConflictError,
      { code: 'precondition_failed', index: 1 },
      'check null on a present key',
    )
    await fails(
      kv.transaction(ns).put('b', 1).put('c', 2).put('a', 3, { ifNoneMatch: '*' }),
      ConflictError,
      { code: 'precondition_failed', index: 2 },
      'ifNoneMatch',
    )
    await fails(
      kv.transaction(ns).delete('a', { ifMatch: next(a.version, 9) }),
      ConflictError,
      { code: 'precondition_failed', index: 0 },
      'a delete with ifMatch',
    )
    await fails(
      kv.transaction(ns).increment('b').increment('a', 1),
      NotANumberError,
      { status: 409, code: 'not_a_number', index: 1 },
      'an increment of text',
    )
    await fails(
      kv.transaction(ns).put('d', 1).put('e', 1).delete('d'),
      InvalidTransactionError,
      { status: 400, code: 'invalid_transaction', index: 2 },
      'a key written twice: the second write',
    )
    await fails(
      kv.transaction(ns).put('big', 'x'.repeat(1024 * 1024 + 10)),
      Error,
      { name: 'PayloadTooLargeError', status: 413, code: 'value_too_large', index: 0 },
      'a value past maxValueBytes',
    )
    await t.rejects(
      kv.transaction(ns).commit(),
      { name: 'InvalidTransactionError', code: 'invalid_transaction' },
      'no ops: refused before sending',
    )
    const tooMany = kv.transaction(ns)
    for (let i = 0; i < 1001; i++) tooMany.check(`k${i}`, null)
    await t.rejects(tooMany.commit(), { name: 'InvalidTransactionError', index: 1000 })
    t.throws(() => kv.transaction(ns).put('k', Number.NaN), BadRequestError)
    t.throws(() => kv.transaction(ns).increment('k', 0.5), InvalidPatchError)
    t.throws(
      () =>
        kv
          .transaction(ns)
          .put('a', 1)
          .put('b', 1, { metadata: [] as never }),
      { name: 'InvalidMetadataError', index: 1 },
      'bad metadata names its op',
    )
    t.throws(
      () =>
        kv
          .transaction(ns)
          .put('a', 1)
          .check('b', undefined as never),
      { name: 'InvalidTransactionError', code: 'invalid_transaction', index: 1 },
      'a check without a version is refused before sending, not sent as broken JSON',
    )
    t.equal((await kv.get(ns, 'a'))?.value, 'text')
  })

  t.test('transactions with a read key: check and get only', async (t) => {
    const ns = nsName('txread')
    await kv.createNamespace(ns)
    const v = await kv.put(ns, 'k', 1)
    const reader = new Cairn(
      await cliKey(srv, email, ['--permission', 'read', '--name', 'tx-reader']),
      { baseUrl: srv.baseUrl },
    )
    const r = await reader.transaction(ns).check('k', v.version).get('k').commit()
    t.same(r.results[1], { found: true, value: 1, version: v.version })
    await t.rejects(reader.transaction(ns).get('k').put('j', 1).commit(), AuthError)
  })

  t.test('listing: version, reverse, entries over pages', async (t) => {
    const ns = nsName('entries')
    await kv.createNamespace(ns)
    t.equal((await kv.list(ns)).version, '0', 'a new namespace is at version 0')
    const keys = Array.from({ length: 25 }, (_, i) => `k/${String(i).padStart(2, '0')}`)
    for (const [i, k] of keys.entries()) {
      await kv.put(ns, k, { i, big: 10n ** 20n + BigInt(i) }, i % 2 ? { metadata: { odd: i } } : {})
    }
    await kv.put(ns, 'other', 'x', { ttl: 3600 })
    const all = await kv.list(ns)
    t.equal(all.version, '26', 'every list answer carries the version: one per write')
    t.same(all.keys, [...keys, 'other'])

    const rev = await kv.list(ns, { reverse: true, prefix: 'k/', limit: 10 })
    t.same(rev.keys, keys.slice(-10).reverse(), 'reverse=1 lists in descending order')
    t.type(rev.cursor, 'string')
    const rev2 = await kv.list(ns, { reverse: true, prefix: 'k/', limit: 10, cursor: rev.cursor })
    t.same(rev2.keys, keys.slice(5, 15).reverse(), 'the cursor keeps the direction')
    const rev3 = await kv.list(ns, { cursor: rev2.cursor })
    t.same(rev3.keys, keys.slice(0, 5).reverse(), 'a cursor alone continues the walk')
    t.equal(rev3.cursor, undefined)
    await t.rejects(
      kv.list(ns, { cursor: rev.cursor, reverse: false }),
      { name: 'BadRequestError', code: 'invalid_cursor' },
      'a cursor with another direction',
    )
    const back: string[] = []
    for await (const k of kv.keys(ns, { reverse: true, pageSize: 4 })) back.push(k)
    t.same(back, [...keys, 'other'].reverse(), 'keys() in reverse')

    const first = await kv.listEntries(ns, { prefix: 'k/', limit: 7 })
    t.equal(first.entries.length, 7)
    t.type(first.cursor, 'string')
    t.equal(first.version, '26')
    t.same(first.entries[1], {
      key: 'k/01',
      version: '2',
      value: { i: 1, big: 100000000000000000001n },
    })

    const walked: any[] = []
    for await (const e of kv.entries<{ i: number; big: bigint }>(ns, {
      prefix: 'k/',
      pageSize: 7,
      include: ['values', 'metadata'],
    })) {
      walked.push(e)
    }
    t.equal(walked.length, 25, 'every entry over 4 pages')
    t.same(
      walked.map((e) => e.key),
      keys,
    )
    t.same(
      walked[3],
      {
        key: 'k/03',
        version: '4',
        value: { i: 3, big: 100000000000000000003n },
        metadata: { odd: 3 },
      },
      'values exact, metadata with them',
    )
    t.equal(walked[4].metadata, null, 'metadata is null when a key has none')

    const metaOnly: any[] = []
    for await (const e of kv.entries(ns, { include: ['metadata'], reverse: true, pageSize: 10 })) {
      metaOnly.push(e)
    }
    t.same(
      metaOnly.map((e) => e.key),
      [...keys, 'other'].reverse(),
      'entries in reverse',
    )
    t.notOk('value' in metaOnly[0], 'no values unless asked')
    t.type(metaOnly[0].expiresAt, 'number', 'expiresAt for a key with a TTL')
    t.equal(metaOnly[0].metadata, null)

    await t.rejects(kv.listEntries(ns, { include: [] }), TypeError, 'an empty include')
  })

  t.test('deletePrefix', async (t) => {
    const ns = nsName('delp')
    await kv.createNamespace(ns)
    for (const k of ['p/1', 'p/2', 'p/3/x', 'p', 'q/1']) await kv.put(ns, k, 1)
    const before = (await kv.list(ns)).version
    t.equal(await kv.deletePrefix(ns, 'p/'), 3, 'the number deleted')
    t.same((await kv.list(ns)).keys, ['p', 'q/1'])
    t.equal((await kv.list(ns)).version, next(before, 3), 'one write per key deleted')
    t.equal(await kv.deletePrefix(ns, 'p/'), 0, 'nothing left to delete')
    await t.rejects(
      kv.deletePrefix(ns, ''),
      { name: 'InvalidPrefixError', status: 400, code: 'invalid_prefix' },
      'an empty prefix is refused before sending',
    )
    t.ok(
      new InvalidPrefixError({ status: 400, code: 'x', message: 'm' }) instanceof BadRequestError,
    )
    t.equal((await kv.list(ns)).keys.length, 2, 'and deleted nothing')
    await t.rejects(kv.deletePrefix(nsName('nope'), 'a'), NotFoundError)
    t.equal(big((await kv.list(ns)).version), big(before) + 3n)
  })
})
