// Keys, values and the basic contract of each call: limits, ordering, return shapes, error codes.
import fs from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { open } from '../../engine/index.js'
import { compareUtf8, errorCode, tempDir } from './helpers.js'

t.test('key length is measured in UTF-8 bytes, 1 to 512', async (t) => {
  const db = await open(tempDir(t, 'keys'))
  t.teardown(() => db.close())
  await db.createNamespace('k')
  const ok = ['a'.repeat(512), '\u{1F600}'.repeat(128), '\u00e9'.repeat(256), 'x']
  for (const key of ok) {
    const res = await db.put('k', key, 1)
    t.equal(res.created, true, `${Buffer.byteLength(key)}-byte key accepted`)
    t.equal((await db.get('k', key))?.value, 1)
  }
  const bad = ['a'.repeat(513), '\u{1F600}'.repeat(129), '\u00e9'.repeat(257), '']
  for (const key of bad) {
    t.equal(
      await errorCode(db.put('k', key, 1)),
      'INVALID_ARGUMENT',
      `${key.length}-char key rejected`,
    )
  }
  t.same(
    (await db.list('k')).keys.sort(compareUtf8),
    [...ok].sort(compareUtf8),
    'nothing else stored',
  )
})

t.test('keys list in UTF-8 byte order, forwards, backwards and after a cursor', async (t) => {
  const dir = tempDir(t, 'keys')
  let db = await open(dir)
  await db.createNamespace('u')
  const keys = [
    'b',
    'B',
    'a',
    'aa',
    'a b',
    '\u00e9',
    '\uFFFD',
    '\u{1F600}',
    'z',
    '\u4e2d',
    '~',
    '0',
  ]
  for (const k of keys) await db.put('u', k, k)
  const sorted = [...keys].sort(compareUtf8)
  t.ok(sorted.indexOf('\u{1F600}') > sorted.indexOf('\uFFFD'), 'astral sorts after U+FFFD')
  for (let round = 0; round < 2; round++) {
    t.same((await db.list('u')).keys, sorted, `forward order (round ${round})`)
    t.same((await db.list('u', { reverse: true })).keys, [...sorted].reverse(), 'reverse order')
    t.same((await db.list('u', { after: '\uFFFD' })).keys, ['\u{1F600}'], 'after U+FFFD')
    t.same((await db.list('u', { prefix: 'a' })).keys, ['a', 'a b', 'aa'], 'prefix a')
    await db.close()
    db = await open(dir)
  }
  await db.close()
})

t.test('list pages with limit and next', async (t) => {
  const db = await open(tempDir(t, 'keys'))
  t.teardown(() => db.close())
  await db.createNamespace('p')
  for (let i = 0; i < 25; i++) await db.put('p', `k${String(i).padStart(2, '0')}`, i)
  await db.put('p', 'other', 0)
  const seen: string[] = []
  let after: string | undefined
  for (let page = 0; page < 10; page++) {
    const res = await db.list('p', { prefix: 'k', limit: 10, after })
    seen.push(...res.keys)
    if (res.next === undefined) {
      t.equal(res.keys.length, 5, 'last page holds the rest')
      break
    }
    t.equal(res.keys.length, 10)
    t.equal(res.next, res.keys[res.keys.length - 1], 'next is the last key returned')
    after = res.next
  }
  t.equal(seen.length, 25)
  t.same(seen, [...seen].sort(compareUtf8))
  const exact = await db.list('p', { prefix: 'k', limit: 25 })
  t.equal(exact.keys.length, 25)
  t.equal(exact.next, undefined, 'no next when exactly limit keys remain')
  const all = await db.list('p')
  t.equal(all.keys.length, 26, 'default limit covers everything here')
  const rev = await db.list('p', { prefix: 'k', reverse: true, limit: 3 })
  t.same(rev.keys, ['k24', 'k23', 'k22'])
  t.equal(rev.next, 'k22')
  t.same((await db.list('p', { prefix: 'k', reverse: true, after: 'k22', limit: 2 })).keys, [
    'k21',
    'k20',
  ])
})

t.test('listing agrees with a sorted model across many chunks of the index', async (t) => {
  // Thousands of keys spread the sorted index over many chunks, so pages, prefixes and their
  // ends fall inside chunks and on their edges, both ways.
  const db = await open(tempDir(t, 'keys'))
  t.teardown(() => db.close())
  await db.createNamespace('m')
  const keys: string[] = []
  for (let g = 0; g < 60; g++)
    for (let i = 0; i < (g * 37) % 150; i++) keys.push(`g${String(g).padStart(2, '0')}/${i}`)
  keys.push('g', 'g0', 'h', '\u00e9', '\u{1F600}x')
  const ops = keys.map((key) => ({ type: 'put' as const, ns: 'm', key, value: 1 }))
  for (let i = 0; i < ops.length; i += 500) await db.batch(ops.slice(i, i + 500))
  const sorted = [...keys].sort(compareUtf8)
  const model = (prefix: string, after: string | undefined, limit: number, reverse: boolean) => {
    let ks = sorted.filter((k) => k.startsWith(prefix))
    if (reverse) ks.reverse()
    if (after !== undefined)
      ks = ks.filter((k) => (reverse ? compareUtf8(k, after) < 0 : compareUtf8(k, after) > 0))
    return ks.length > limit ? { keys: ks.slice(0, limit), next: ks[limit - 1] } : { keys: ks }
  }
  const prefixes = ['', 'g', 'g0', 'g1', 'g17/', 'g17/1', 'g59/', 'g00/', 'h', 'i', '\u00e9']
  const afters = [undefined, 'g', 'g17/', 'g17/5', 'g3', 'g99', '\u{1F600}']
  let bad = 0
  for (const prefix of prefixes)
    for (const after of afters)
      for (const limit of [1, 2, 99, 100, 101, 517, 1000])
        for (const reverse of [false, true]) {
          const { version: _v, ...got } = await db.list('m', { prefix, after, limit, reverse })
          const want = model(prefix, after, limit, reverse)
          if (JSON.stringify(got) !== JSON.stringify(want) && bad++ < 3)
            t.same(got, want, `${JSON.stringify({ prefix, after, limit, reverse })}`)
        }
  t.equal(bad, 0, 'every listing matches the model')
  // Walking the whole namespace page by page, both ways, gives every key once.
  for (const reverse of [false, true]) {
    const seen: string[] = []
    let after: string | undefined
    for (;;) {
      const page = await db.list('m', { limit: 333, after, reverse })
      seen.push(...page.keys)
      if (page.next === undefined) break
      after = page.next
    }
    t.same(seen, reverse ? [...sorted].reverse() : sorted, `paged ${reverse ? 'back' : 'forth'}`)
  }
})

t.test('values of every JSON type and raw bytes round-trip, also from disk', async (t) => {
  const dir = tempDir(t, 'keys')
  const bytes = Buffer.alloc(256)
  for (let i = 0; i < 256; i++) bytes[i] = i
  const values: [string, unknown][] = [
    ['null', null],
    ['true', true],
    ['false', false],
    ['zero', 0],
    ['neg', -17],
    ['float', 3.25],
    ['bigsafe', Number.MAX_SAFE_INTEGER],
    ['str', 'h\u00e9llo \u{1F600}'],
    ['empty-str', ''],
    ['empty-arr', []],
    ['empty-obj', {}],
    ['nested', { a: [1, { b: null, c: [true, 'x'] }], d: { e: { f: 1.5 } } }],
    ['array', [null, 1, 'two', [3], { four: 4 }]],
  ]
  for (const cacheBytes of [undefined, 0]) {
    let db = await open(dir, { cacheBytes })
    await db.createNamespace('v')
    for (const [k, v] of values) await db.put('v', k, v)
    await db.put('v', 'bytes', bytes)
    await db.put('v', 'empty-bytes', Buffer.alloc(0))
    await db.put('v', 'u8', new Uint8Array([1, 2, 3]))
    for (let reopen = 0; reopen < 2; reopen++) {
      for (const [k, v] of values) {
        const got = await db.get('v', k)
        t.ok(got, `${k} present`)
        t.strictSame(got?.value, v, `${k} value (cacheBytes ${cacheBytes}, reopen ${reopen})`)
      }
      for (const [k, want] of [
        ['bytes', bytes],
        ['empty-bytes', Buffer.alloc(0)],
        ['u8', Buffer.from([1, 2, 3])],
      ] as const) {
        const got = (await db.get('v', k))?.value
        t.ok(Buffer.isBuffer(got), `${k} comes back as a Buffer`)
        t.ok(Buffer.isBuffer(got) && got.equals(want), `${k} byte-exact`)
      }
      await db.close()
      db = await open(dir, { cacheBytes })
    }
    await db.dropNamespace('v')
    await db.close()
  }
})

t.test('null is a value, not a missing key', async (t) => {
  const db = await open(tempDir(t, 'keys'))
  t.teardown(() => db.close())
  await db.createNamespace('n')
  await db.put('n', 'x', null)
  const got = await db.get('n', 'x')
  t.ok(got, 'present')
  t.equal(got?.value, null)
  t.equal(await db.get('n', 'missing'), undefined)
})

t.test('namespaces: create, drop, idempotence and missing-namespace errors', async (t) => {
  const db = await open(tempDir(t, 'keys'))
  t.teardown(() => db.close())
  t.equal(await db.createNamespace('a'), true)
  t.equal(await db.createNamespace('a'), false, 'second create resolves false')
  t.equal(db.hasNamespace('a'), true)
  t.equal(db.hasNamespace('b'), false)
  await db.put('a', 'k1', 'v')
  await db.put('a', 'k2', 'value')
  const info = db.namespaces().find((n) => n.name === 'a')
  t.equal(info?.keys, 2)
  t.ok((info?.bytes ?? 0) > 0, 'bytes counted')
  t.same(db.namespaceStats('a'), info)
  t.equal(db.namespaceStats('b'), undefined)
  t.equal(await errorCode(db.put('b', 'k', 1)), 'NAMESPACE_NOT_FOUND', 'put')
  t.equal(await errorCode(db.get('b', 'k')), 'NAMESPACE_NOT_FOUND', 'get')
  t.equal(await errorCode(db.delete('b', 'k')), 'NAMESPACE_NOT_FOUND', 'delete')
  t.equal(await errorCode(db.list('b')), 'NAMESPACE_NOT_FOUND', 'list')
  t.equal(await errorCode(db.increment('b', 'k', 1)), 'NAMESPACE_NOT_FOUND', 'increment')
  t.equal(
    await errorCode(db.batch([{ type: 'put', ns: 'b', key: 'k', value: 1 }])),
    'NAMESPACE_NOT_FOUND',
    'batch',
  )
  t.equal(await db.dropNamespace('a'), true)
  t.equal(await db.dropNamespace('a'), false, 'second drop resolves false')
  t.equal(db.hasNamespace('a'), false)
  t.equal(await errorCode(db.get('a', 'k1')), 'NAMESPACE_NOT_FOUND', 'dropped namespace is gone')
  t.equal(await db.createNamespace('a'), true)
  t.same((await db.list('a')).keys, [], 'recreated namespace is empty')
  t.equal(await db.get('a', 'k1'), undefined)
})

t.test('put, delete, ifVersion and increment return what the contract says', async (t) => {
  const db = await open(tempDir(t, 'keys'))
  t.teardown(() => db.close())
  await db.createNamespace('c')
  const first = await db.put('c', 'k', 'one')
  t.equal(first.created, true)
  const second = await db.put('c', 'k', 'two')
  t.equal(second.created, false)
  t.ok(second.version > first.version, 'versions increase')
  t.equal((await db.get('c', 'k'))?.version, second.version)
  t.equal(await errorCode(db.put('c', 'k', 'x', { ifVersion: first.version })), 'CONFLICT')
  t.equal(
    await errorCode(db.put('c', 'k', 'x', { ifVersion: null })),
    'CONFLICT',
    'null: must be absent',
  )
  t.equal(await errorCode(db.delete('c', 'k', { ifVersion: first.version })), 'CONFLICT')
  t.equal((await db.get('c', 'k'))?.value, 'two', 'failed conditions changed nothing')
  const third = await db.put('c', 'k', 'three', { ifVersion: second.version })
  t.ok(third.version > second.version)
  t.equal((await db.put('c', 'new', 1, { ifVersion: null })).created, true)
  t.equal(
    await errorCode(db.put('c', 'absent', 1, { ifVersion: 5 })),
    'CONFLICT',
    'ifVersion on a missing key',
  )
  t.equal(await db.delete('c', 'k', { ifVersion: third.version }), true)
  t.equal(await db.delete('c', 'k'), false, 'deleting a missing key resolves false')
  t.equal(await db.increment('c', 'n', 5), 5, 'a missing key counts as 0')
  t.equal(await db.increment('c', 'n', -2), 3)
  t.equal(await db.increment('c', 'n', 0.5), 3.5)
  t.equal((await db.get('c', 'n'))?.value, 3.5)
  await db.put('c', 's', 'text')
  t.equal(await errorCode(db.increment('c', 's', 1)), 'NOT_A_NUMBER')
  t.equal((await db.get('c', 's'))?.value, 'text')
})

t.test('batch is all or nothing, with checks', async (t) => {
  const db = await open(tempDir(t, 'keys'))
  t.teardown(() => db.close())
  await db.createNamespace('b')
  await db.createNamespace('b2')
  const v = await db.put('b', 'x', 1)
  const res = await db.batch(
    [
      { type: 'put', ns: 'b', key: 'y', value: 2 },
      { type: 'put', ns: 'b2', key: 'z', value: 3 },
      { type: 'delete', ns: 'b', key: 'x' },
    ],
    {
      checks: [
        { ns: 'b', key: 'x', version: v.version },
        { ns: 'b', key: 'y', version: null },
      ],
    },
  )
  // Versions count per namespace: b's writes take 2 and 3 (in op order), b2's first is 1.
  t.equal(v.version, 1, "a new namespace's first write is version 1")
  t.equal(
    (await db.get('b', 'y'))?.version,
    2,
    "each write in a batch takes its namespace's next version",
  )
  t.equal((await db.get('b2', 'z'))?.version, 1)
  t.equal(res.version, 3, 'a batch answers its last version')
  t.equal(db.namespaceVersion('b'), 3, "the namespace's version counts its delete too")
  t.equal(await db.get('b', 'x'), undefined)
  const failed = await errorCode(
    db.batch([{ type: 'put', ns: 'b', key: 'w', value: 9 }], {
      checks: [{ ns: 'b', key: 'y', version: null }],
    }),
  )
  t.equal(failed, 'CONFLICT')
  t.equal(await db.get('b', 'w'), undefined, 'nothing of a failed batch applied')
  const missingNs = await errorCode(
    db.batch([
      { type: 'put', ns: 'b', key: 'w', value: 9 },
      { type: 'put', ns: 'nope', key: 'w', value: 9 },
    ]),
  )
  t.equal(missingNs, 'NAMESPACE_NOT_FOUND')
  t.equal(await db.get('b', 'w'), undefined, 'nothing applied when one namespace is missing')
  const badKey = await errorCode(
    db.batch([
      { type: 'put', ns: 'b', key: 'w', value: 9 },
      { type: 'put', ns: 'b', key: '', value: 9 },
    ]),
  )
  t.equal(badKey, 'INVALID_ARGUMENT')
  t.equal(await db.get('b', 'w'), undefined, 'nothing applied when one key is invalid')
})

t.test('a closed engine rejects calls with CLOSED', async (t) => {
  const db = await open(tempDir(t, 'keys'))
  await db.createNamespace('c')
  await db.close()
  t.equal(await errorCode(db.put('c', 'k', 1)), 'CLOSED')
  t.equal(await errorCode(db.get('c', 'k')), 'CLOSED')
})

t.test(
  'a large namespace lists correctly while its sorted order is built after open',
  async (t) => {
    const dir = tempDir(t, 'keys')
    let db = await open(dir, { durability: 'none' })
    await db.createNamespace('big')
    const n = 60_000 // above the size sorted while opening
    const key = (i: number) => `k${String((i * 7919) % n).padStart(6, '0')}`
    for (let i = 0; i < n; i += 1000) {
      await Promise.all(Array.from({ length: 1000 }, (_, j) => db.put('big', key(i + j), i + j)))
    }
    await db.close()
    // Without its checkpoint the open replays the log, and the sorted list is built after.
    fs.rmSync(path.join(dir, 'CHECKPOINT'))
    db = await open(dir, { durability: 'none' })
    // Writes straight after open land while the background build runs.
    const writes = [
      db.put('big', 'a-first', 1),
      db.put('big', 'k999999', 1),
      db.delete('big', 'k000000'),
      db.delete('big', 'k000001'),
      db.put('big', 'k000001', 'back'),
    ]
    const page = db.list('big', { limit: 3 })
    await Promise.all(writes)
    t.same(
      (await page).keys,
      ['a-first', 'k000001', 'k000002'],
      'the first listing waits for the build',
    )
    const all = (await db.list('big', { limit: 100_000 })).keys
    t.equal(all.length, n + 1, 'every key once')
    t.same(all, [...all].sort(compareUtf8), 'in order')
    t.equal(all[all.length - 1], 'k999999')
    t.equal((await db.get('big', key(1234)))?.value, 1234, 'gets work as before')
    await db.close()
  },
)

t.test('versions count per namespace and never repeat, across compaction and reopen', async (t) => {
  const dir = tempDir(t, 'keys')
  let db = await open(dir, { checkpointBytes: 0 })
  await db.createNamespace('a')
  await db.createNamespace('b')
  t.equal((await db.put('a', 'k', 1)).version, 1)
  t.equal((await db.put('b', 'k', 1)).version, 1, "another namespace's writes do not show")
  t.equal((await db.put('a', 'k', 2)).version, 2)
  t.equal(await db.delete('a', 'k'), true)
  t.equal(db.namespaceVersion('a'), 3)
  // A full pass drops the tombstone that carried a's newest version.
  await db.compact({ full: true })
  await db.close()
  db = await open(dir, { checkpointBytes: 0 })
  t.equal(db.namespaceVersion('a'), 3, 'the version survives its tombstone (log replay)')
  t.equal((await db.put('a', 'other', 1)).version, 4)
  await db.delete('a', 'other')
  await db.close() // writes a checkpoint
  db = await open(dir)
  t.equal(db.openedFrom, 'checkpoint')
  t.equal(db.namespaceVersion('a'), 5, 'the version survives a delete (checkpoint)')
  await db.dropNamespace('a')
  await db.createNamespace('a')
  t.equal(db.namespaceVersion('a'), 0, 'a namespace made again starts over')
  t.equal((await db.put('a', 'k', 1)).version, 1)
  await db.close()
  db = await open(dir)
  t.equal((await db.get('a', 'k'))?.version, 1, "the old namespace's entries stay dead")
  t.equal(db.namespaceVersion('b'), 1)
  await db.close()
})

t.test('just after open, a large namespace lists through list() until listNow can', async (t) => {
  const dir = tempDir(t, 'keys')
  let db = await open(dir)
  await db.createNamespace('big')
  const n = 60_000 // over SORT_NOW: its sorted list is made after open, a slice at a time
  for (let i = 0; i < n; i += 1000)
    await db.batch(
      Array.from({ length: 1000 }, (_, j) => ({
        type: 'put' as const,
        ns: 'big',
        key: `k${String(i + j).padStart(6, '0')}`,
        value: i + j,
      })),
    )
  await db.close()
  fs.rmSync(path.join(dir, 'CHECKPOINT')) // an open by log replay, which builds the list after
  db = await open(dir)
  t.teardown(() => db.close())
  const want = Array.from({ length: 5 }, (_, i) => `k${String(59_990 + i).padStart(6, '0')}`)
  t.equal(db.listNow('big', { prefix: 'k0599', limit: 5 }), undefined, 'not yet at once')
  const page = await db.list('big', { prefix: 'k0599', limit: 5, after: 'k059989' })
  t.same(page.keys, want, 'list() waits for the sorted list and answers')
  t.same(
    db.listNow('big', { prefix: 'k0599', limit: 5, after: 'k059989' })?.keys,
    want,
    'then listNow answers the same at once',
  )
  t.equal(await errorCode(db.list('big', { limit: 0 })), 'INVALID_ARGUMENT')
  t.throws(() => db.listNow('big', { limit: 0 }), { code: 'INVALID_ARGUMENT' })
  t.throws(() => db.listNow('nope'), { code: 'NAMESPACE_NOT_FOUND' })
})

t.test('keys written since the open list as JSON text as JSON.stringify writes them', async (t) => {
  // A chunk of the sorted list that keeps serving listings gets its keys' JSON text made
  // once (engine/sorted-keys.ts); pages are then copied from it. Keys JSON must escape, keys
  // past ASCII, and inserts and removals between listings must all give the same text.
  const db = await open(tempDir(t, 'keys'), { checkpointBytes: 0 })
  t.teardown(() => db.close())
  await db.createNamespace('j')
  const odd = ['', 'é', '"q', '\\', '\t', '\u2028', '\u{1F600}', 'z']
  const keyOf = (i: number) => `${'abc'[i % 3]}${String(i % 7)}/${odd[i % odd.length]}${i}`
  const model = new Set<string>()
  const put = async (k: string) => {
    await db.put('j', k, 1)
    model.add(k)
  }
  for (let i = 0; i < 4000; i++) await put(keyOf(i))
  let copied = 0
  let bad = 0
  let n = 4000
  for (let round = 0; round < 40; round++) {
    for (const prefix of ['', 'a', 'b3/', 'c6/', 'a0/é'])
      for (const after of [undefined, 'b3/', 'a5/\\']) {
        const limit = round % 2 === 0 ? 100 : 1000
        const all = [...model]
          .filter((k) => k.startsWith(prefix) && (after === undefined || compareUtf8(k, after) > 0))
          .sort(compareUtf8)
        const page = await db.list('j', { prefix, after, limit, json: true })
        if (page.json !== undefined) copied++
        const text = page.json?.toString('utf8') ?? JSON.stringify(page.keys)
        const want = JSON.stringify(all.slice(0, limit))
        if (text !== want && bad++ < 3) t.equal(text, want, `${prefix} after ${after}`)
        const next = all.length > limit ? all[limit - 1] : undefined
        if (page.next !== next && bad++ < 3) t.equal(page.next, next, `next: ${prefix}`)
      }
    // Every few rounds some keys come and go, in chunks listed and not.
    if (round % 5 === 4)
      for (let i = 0; i < 50; i++) {
        if (i % 2 === 0) await put(keyOf(n++))
        else {
          const k = keyOf((n * 7 + i * 13) % n)
          await db.delete('j', k)
          model.delete(k)
        }
      }
  }
  t.equal(bad, 0, 'every page as JSON text is what JSON.stringify makes of its keys')
  t.ok(copied > 100, `${copied} pages were copied from chunks' text`)
})

t.test('cached chunk text follows removals, splits and dropped chunks', async (t) => {
  const db = await open(tempDir(t, 'keys'), { checkpointBytes: 0, durability: 'none' })
  t.teardown(() => db.close())
  await db.createNamespace('j')
  const key = (i: number) => `k${String(i).padStart(5, '0')}`
  for (let i = 0; i < 3000; i++) await db.put('j', key(i), 1)
  const shapes: [string, string | undefined][] = [
    ['', undefined],
    ['k01', undefined],
    ['', key(1500)],
    ['', key(2100)],
    ['k024', undefined],
  ]
  // Twenty listings of each page make every chunk listed keep its text.
  const check = async (what: string) => {
    let bad = 0
    for (let r = 0; r < 20; r++)
      for (const limit of [200, 1000])
        for (const [prefix, after] of shapes) {
          const a = await db.list('j', { prefix, after, limit, json: true })
          const b = await db.list('j', { prefix, after, limit })
          const text = a.json?.toString() ?? JSON.stringify(a.keys)
          if ((text !== JSON.stringify(b.keys) || a.next !== b.next) && bad++ < 2)
            t.equal(text, JSON.stringify(b.keys), `${what}: ${prefix} after ${after}`)
        }
    t.equal(bad, 0, what)
  }
  await check('as written')
  await db.delete('j', key(1200)) // one key of a chunk that has its text
  await check('one key removed')
  for (let i = 0; i < 300; i++) await db.delete('j', key(i)) // the first chunk goes empty
  await check('a chunk emptied')
  for (let i = 0; i < 300; i++) await db.put('j', `${key(2000)}x${String(i).padStart(3, '0')}`, 1)
  await check('a chunk split')
})
