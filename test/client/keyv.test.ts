// KeyvCairn's own behaviour beyond @keyv/test-suite, with the real Keyv against a real server:
// server-side TTLs, clear() keeping to its Keyv namespace, the iterator over entry listings,
// getMany/setMany/deleteMany as transactions, exact values, errors and disconnect.
import Keyv from 'keyv'
import t from 'tap'
import { AuthError, type Cairn, NotFoundError } from '../../client/src/index.js'
import { KeyvCairn, type KeyvCairnOptions } from '../../client/src/keyv.js'
import { account, nsName, type Server, server } from './helpers.js'

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** A fetch that forwards to the real one and notes `METHOD /path` of each request. */
function recording(): { fetch: NonNullable<KeyvCairnOptions['fetch']>; calls: string[] } {
  const calls: string[] = []
  return {
    calls,
    fetch: (input, init) => {
      calls.push(`${init.method} ${new URL(input).pathname}`)
      return fetch(input, init)
    },
  }
}

async function keys(kv: Cairn, ns: string): Promise<string[]> {
  const out: string[] = []
  for await (const k of kv.keys(ns)) out.push(k)
  return out
}

t.test('KeyvCairn against a real server', async (t) => {
  const srv: Server = await server(t)
  const { kv, apiKey } = await account(srv)
  const make = async (stem: string) => {
    const ns = nsName(stem)
    await kv.createNamespace(ns)
    return ns
  }
  const storeFor = (namespace: string, extra: Partial<KeyvCairnOptions> = {}) =>
    new KeyvCairn({ url: srv.url, apiKey, namespace, retries: false, ...extra })

  t.test('a TTL in milliseconds becomes a server TTL rounded up to seconds', async (t) => {
    const ns = await make('ttl')
    const keyv = new Keyv({ store: storeFor(ns) })
    const before = Date.now()
    t.equal(await keyv.set('short', 'v', 2500), true)
    const after = Date.now()
    await keyv.set('forever', 'v')
    const hit = await kv.get(ns, 'keyv:short')
    t.ok(hit?.expiresAt, 'the server holds an expiry')
    t.ok(
      hit!.expiresAt! >= Math.floor(before / 1000) + 2 &&
        hit!.expiresAt! <= Math.ceil(after / 1000) + 3,
      `2.5 s became 3 s on the server (expires at ${hit!.expiresAt}, set at ${before / 1000})`,
    )
    t.equal((await kv.get(ns, 'keyv:forever'))?.expiresAt, undefined, 'no TTL, no expiry')

    const store = storeFor(ns)
    await store.set('zero', '"v"', 0)
    await store.set('negative', '"v"', -5)
    await store.set('centuries', '"v"', 200 * 365 * 86400 * 1000)
    t.equal(await store.set('tiny', '"v"', 1), true)
    for (const k of ['zero', 'negative', 'centuries']) {
      const e = await kv.get(ns, k)
      t.ok(e !== null && e.expiresAt === undefined, `${k}: stored without a server expiry`)
    }
    // Read at once it still has its 1 s; on a slow machine it may be gone already. Never
    // does it stay without an expiry, as a TTL rounded down to 0 would.
    const tiny = await kv.get(ns, 'tiny')
    t.ok(tiny === null || tiny.expiresAt !== undefined, '1 ms is still a 1 s server TTL')

    // The server drops the entry once its TTL has run out.
    await sleep(hit!.expiresAt! * 1000 - Date.now() + 1100)
    t.equal(await kv.get(ns, 'keyv:short'), null, 'gone from the server')
    t.equal(await keyv.get('short'), undefined)
    t.equal(await keyv.get('forever'), 'v')
  })

  t.test("has() follows Keyv's exact expiry, not the server's rounded one", async (t) => {
    const ns = await make('has')
    const keyv = new Keyv({ store: storeFor(ns) })
    await keyv.set('later', 'v', 60_000)
    t.equal(await keyv.has('later'), true)
    t.equal(await keyv.has('never-set'), false)
    // Entries whose Keyv expiry has passed while the server, whose TTL is whole seconds,
    // still holds them: written as Keyv writes them, with an hour left on the server.
    const past = Date.now() - 1000
    const future = Date.now() + 3_600_000
    await kv.put(ns, 'keyv:gone', JSON.stringify({ value: 'v', expires: past }), { ttl: 3600 })
    await kv.put(ns, 'keyv:kept', JSON.stringify({ value: 'v', expires: future }), { ttl: 3600 })
    t.equal(await keyv.has('gone'), false, 'its Keyv expiry has passed')
    t.equal(await keyv.has('kept'), true)
    // With Keyv's serializer off the stored object carries the expiry itself.
    const raw = new Keyv({ store: storeFor(ns), namespace: 'raw', serialize: undefined })
    await kv.put(ns, 'raw:gone', { value: 'v', expires: past }, { ttl: 3600 })
    await kv.put(ns, 'raw:kept', { value: 'v', expires: future }, { ttl: 3600 })
    t.equal(await raw.has('gone'), false, 'raw entries too')
    t.equal(await raw.has('kept'), true)
    // Text that is not Keyv's (another serializer's, or none) counts as present.
    await kv.put(ns, 'keyv:opaque', 'not JSON at all')
    t.equal(await keyv.has('opaque'), true)
  })

  t.test('clear() deletes its own Keyv namespace and nothing else', async (t) => {
    const ns = await make('clear')
    const a = new Keyv({ store: storeFor(ns), namespace: 'a' })
    const ab = new Keyv({ store: storeFor(ns), namespace: 'ab' })
    const b = new Keyv({ store: storeFor(ns), namespace: 'b' })
    for (const keyv of [a, ab, b]) {
      await keyv.set('x', 1)
      await keyv.set('y:z', 2)
    }
    for (const plain of ['a', 'a;x', 'aa:x', 'plain', 'A:x']) await kv.put(ns, plain, plain)
    await a.clear()
    t.same(
      await keys(kv, ns),
      ['A:x', 'a', 'a;x', 'aa:x', 'ab:x', 'ab:y:z', 'b:x', 'b:y:z', 'plain'],
      'only the a: keys went',
    )
    t.equal(await ab.get('x'), 1)
    t.equal(await b.get('y:z'), 2)

    // Without a Keyv namespace the store owns the whole Cairn namespace: more than a page.
    const all = await make('clear-all')
    const store = storeFor(all)
    store.namespace = undefined
    const many = Array.from({ length: 1234 }, (_, i) => ({ key: `k${i}`, value: `"${i}"` }))
    t.same(
      await store.setMany(many),
      many.map(() => true),
    )
    await kv.put(all, 'not-keyv', true)
    t.equal((await keys(kv, all)).length, 1235)
    await store.clear()
    t.same(await keys(kv, all), [], 'every key of the Cairn namespace went')
  })

  t.test('iterator() walks the entry listing of one Keyv namespace', async (t) => {
    const ns = await make('iter')
    const store = storeFor(ns)
    const keyv = new Keyv({ store, namespace: 'it' })
    const other = new Keyv({ store: storeFor(ns), namespace: 'other' })
    const want = new Map<string, string>()
    // 150 entries: more than one page of an entry listing with values (100).
    await keyv.setMany(
      Array.from({ length: 150 }, (_, i) => {
        want.set(`k${String(i).padStart(3, '0')}`, `v${i}`)
        return { key: `k${String(i).padStart(3, '0')}`, value: `v${i}` }
      }),
    )
    await other.set('k000', 'other')
    await kv.put(ns, 'it', 'not a Keyv key')
    await kv.put(ns, 'itx:k', 'not this namespace')

    const seen: [string, unknown][] = []
    for await (const entry of store.iterator('it')) seen.push(entry as [string, unknown])
    t.same(
      seen.map(([k]) => k),
      [...want.keys()].map((k) => `it:${k}`),
      'prefixed keys, in order, across pages, none from elsewhere',
    )
    t.same(
      seen.map(([, raw]) => JSON.parse(raw as string).value),
      [...want.values()],
      "each value as stored: Keyv's serialized text",
    )
    let all = 0
    for await (const _ of store.iterator()) all++
    t.equal(all, 153, 'without a namespace: every key of the Cairn namespace')

    t.equal(keyv.iterator, undefined, 'Keyv does not turn its iterator on for dialect cairn')
    keyv.iterator = keyv.generateIterator(store.iterator.bind(store))
    const viaKeyv = new Map<string, unknown>()
    for await (const [k, v] of keyv.iterator!({})) viaKeyv.set(k, v)
    t.same(viaKeyv, want, 'through Keyv: keys without the prefix, values deserialized')

    // Breaking out early stops reading pages.
    const rec = recording()
    const counted = storeFor(ns, { fetch: rec.fetch })
    for await (const _ of counted.iterator('it')) break
    t.equal(rec.calls.length, 1, 'one page read for one entry')
  })

  t.test('getMany, setMany and deleteMany are transactions', async (t) => {
    const ns = await make('many')
    const rec = recording()
    const store = storeFor(ns, { fetch: rec.fetch })
    const keyv = new Keyv({ store })
    const tx = `POST /v1/${ns}`

    t.same(
      await keyv.setMany([
        { key: 'a', value: 1 },
        { key: 'b', value: 2, ttl: 60_000 },
        { key: 'a', value: 3 },
      ]),
      [true, true, true],
      "keyv.setMany's results",
    )
    t.same(rec.calls, [tx], 'one transaction')
    t.same(await kv.get(ns, 'keyv:a').then((e) => e?.value), '{"value":3}', 'the last a wins')
    t.ok((await kv.get(ns, 'keyv:b'))?.expiresAt, "b's TTL went with it")

    rec.calls.length = 0
    t.same(await keyv.get(['a', 'missing', 'b']), [3, undefined, 2])
    t.same(rec.calls, [tx], 'getMany: one transaction')

    rec.calls.length = 0
    t.equal(await keyv.delete(['a', 'missing', 'a']), true, 'true: some were there')
    t.same(rec.calls, [tx], 'deleteMany: one transaction')
    t.equal(await keyv.delete(['a', 'missing']), false, 'false: none were there')
    t.equal(await keyv.get('b'), 2, 'b untouched')

    // More than one transaction holds (1,000 ops): split, in order.
    const big = Array.from({ length: 2001 }, (_, i) => ({ key: `n${i}`, value: i }))
    rec.calls.length = 0
    await keyv.setMany(big)
    const got = await keyv.get(big.map((e) => e.key))
    t.same(
      got,
      big.map((e) => e.value),
      '2,001 values back in order',
    )
    t.equal(await keyv.delete(big.map((e) => e.key)), true)
    t.same(rec.calls, [tx, tx, tx, tx, tx, tx, tx, tx, tx], 'three transactions each')
    t.equal((await keys(kv, ns)).length, 1, 'only b is left')

    // A transaction is all or nothing: one bad key and none of its entries is written.
    const errors: unknown[] = []
    keyv.on('error', (e) => errors.push(e))
    t.same(
      await keyv.setMany([
        { key: 'fine', value: 1 },
        { key: 'bad/../key', value: 2 },
      ]),
      [false, false],
    )
    t.match(errors[0], { code: 'invalid_transaction', index: 1 }, 'the bad op named')
    t.equal(await kv.get(ns, 'keyv:fine'), null, 'the good entry was not written either')
  })

  t.test('values come back exactly as Keyv stored them', async (t) => {
    const ns = await make('exact')
    const store = storeFor(ns)
    const texts = [
      '',
      'plain',
      'caf\u00e9 \u{1F600} \u4e2d',
      '\u0000\u001f\u007f',
      'lone \ud800 surrogate \udc00',
      '{"a":1.50,"b":12345678901234567890,"__proto__":1}',
      '"quoted" \\back\\slashed\\ \'single\'',
      'x'.repeat(200_000),
    ]
    for (const [i, text] of texts.entries()) await store.set(`s${i}`, text)
    for (const [i, text] of texts.entries()) {
      t.equal(await store.get(`s${i}`), text, `get: text ${i} exact`)
    }
    const many = await store.getMany(texts.map((_, i) => `s${i}`))
    t.ok(
      many.every((v, i) => v === texts[i]),
      'getMany: every text exact',
    )
    const listed = new Map<string, unknown>()
    for await (const [k, v] of store.iterator()) listed.set(k as string, v)
    t.ok(
      texts.every((text, i) => listed.get(`s${i}`) === text),
      'iterator: every text exact',
    )

    // Keyv's serializer off: the { value, expires } object is stored as JSON.
    const raw = new Keyv({ store, namespace: 'raw', serialize: undefined, deserialize: undefined })
    const value = { big: 12345678901234567890n, negZero: -0, dec: 0.1, list: [1, 'x', null] }
    await raw.set('obj', value)
    const back = await raw.get('obj')
    t.equal(back.big, 12345678901234567890n, 'a big integer, exact')
    t.ok(Object.is(back.negZero, -0), '-0 kept')
    t.same(back, value)
    await raw.set('text', 'a string')
    t.equal(await raw.get('text'), 'a string')
  })

  t.test('errors are emitted, answered as misses, and thrown when asked', async (t) => {
    const ns = await make('errors')
    const bad = storeFor(ns, { apiKey: 'cairn_not_a_real_key_at_all_0000000000' })
    const keyv = new Keyv({ store: bad })
    const errors: unknown[] = []
    keyv.on('error', (e) => errors.push(e))
    t.equal(await keyv.get('k'), undefined)
    t.equal(await keyv.set('k', 1), false)
    t.equal(await keyv.delete('k'), false)
    t.equal(await keyv.has('k'), false)
    t.same(await keyv.get(['k', 'l']), [undefined, undefined])
    await keyv.clear()
    t.ok(errors.length >= 6, `each call emitted (${errors.length})`)
    t.ok(
      errors.every((e) => e instanceof AuthError && e.status === 401),
      'as AuthError, 401',
    )
    await t.rejects(
      (async () => {
        for await (const _ of bad.iterator('keyv')) break
      })(),
      AuthError,
      'the iterator throws',
    )

    const missing = storeFor('no-such-namespace')
    const seen: unknown[] = []
    missing.on('error', (e) => seen.push(e))
    t.equal(await missing.set('k', '"v"'), false)
    t.ok(
      seen[0] instanceof NotFoundError && seen[0].code === 'namespace_not_found',
      'a missing Cairn namespace is a NotFoundError',
    )

    const throwing = new Keyv({
      store: storeFor(ns, {
        apiKey: 'cairn_not_a_real_key_at_all_0000000000',
        throwOnErrors: true,
      }),
      throwOnErrors: true,
    })
    throwing.on('error', () => {})
    await t.rejects(throwing.get('k'), AuthError, 'throwOnErrors: get throws')
    await t.rejects(throwing.set('k', 1), AuthError, 'throwOnErrors: set throws')

    t.throws(
      () => new KeyvCairn({ url: srv.url, apiKey } as KeyvCairnOptions),
      TypeError,
      'a Cairn namespace is required',
    )
    t.notOk(JSON.stringify(storeFor(ns).opts).includes(apiKey), 'opts never show the API key')
  })

  t.test("the README's example", async (t) => {
    const ns = await make('readme')
    const store = new KeyvCairn({ url: srv.url, apiKey, namespace: ns })
    const keyv = new Keyv({ store, namespace: 'sessions' })
    const errors: unknown[] = []
    keyv.on('error', (err) => errors.push(err))
    await keyv.set('abc', { user: 42 }, 60_000)
    await kv.put(ns, 'other', 1)
    t.same(await keyv.get('abc'), { user: 42 })
    t.same(await keys(kv, ns), ['other', 'sessions:abc'], 'stored as sessions:abc')
    keyv.iterator = keyv.generateIterator(store.iterator.bind(store))
    const seen: unknown[] = []
    for await (const [key, value] of keyv.iterator!(undefined)) seen.push([key, value])
    t.same(seen, [['abc', { user: 42 }]])
    await keyv.clear()
    t.same(await keys(kv, ns), ['other'])

    const bare = new Keyv({
      store: new KeyvCairn({ url: srv.url, apiKey, namespace: ns }),
      namespace: undefined,
    })
    await bare.set('k', 1)
    t.same(await keys(kv, ns), ['k', 'other'], 'namespace: undefined: no prefix')
    await bare.clear()
    t.same(await keys(kv, ns), [], 'and clear() empties the Cairn namespace')
    t.same(errors, [])
  })

  t.test('disconnect() aborts requests in flight; later calls work', async (t) => {
    const ns = await make('disc')
    const store = storeFor(ns)
    await store.set('k', '"v"')
    const errors: unknown[] = []
    store.on('error', (e) => errors.push(e))
    const inFlight = [store.get('k'), store.has('k'), store.getMany(['k'])]
    await store.disconnect()
    t.same(await Promise.all(inFlight), [undefined, false, [undefined]], 'each ends as a miss')
    t.equal(errors.length, 3)
    t.ok(
      errors.every((e) => /disconnected/.test(String((e as Error).message))),
      'each emitted as disconnected',
    )
    t.equal(await store.get('k'), '"v"', 'the next call is served')
    const walk = store.iterator()
    const first = walk.next()
    await store.disconnect()
    await t.rejects(first, /disconnected/, 'an iterator reading a page is aborted too')
    const again: unknown[] = []
    for await (const e of store.iterator()) again.push(e)
    t.same(again, [['k', '"v"']], 'and a new one walks as before')

    // Many calls at once on one store: each has its own signal, so none piles up listeners.
    const warnings: string[] = []
    const onWarning = (w: Error) => warnings.push(w.name)
    process.on('warning', onWarning)
    t.teardown(() => process.off('warning', onWarning))
    const sets = await Promise.all(
      Array.from({ length: 40 }, (_, i) => store.set(`c${i}`, `"${i}"`)),
    )
    t.ok(sets.every(Boolean))
    await sleep(50)
    t.same(warnings, [], 'no MaxListenersExceededWarning')
  })
})
