// The Upstash REST wire as the contract gives it and @upstash/redis relies on it: answers
// plain and in base64, pipeline and multi-exec shapes, the path form, error bodies as strings,
// auth and permissions, the sync token, CORS, values shared with /v1, usage and limits.
import t from 'tap'
import { cli } from '../server/contract/cli.js'
import { otherAccount, plansFile } from '../server/contract/setup.js'
import { raw, redisFor, upstashSetup } from './setup.js'

const { srv, api, email, database } = await upstashSetup(t, {
  plans: plansFile(
    { id: 'tiny', ratePerSecond: 1, burst: 5 },
    { id: 'daily', requestsPerDay: 6 },
    { id: 'small', maxValueBytes: 100 },
  ),
})
const B64 = { 'upstash-encoding': 'base64' }
const b64 = (s: string) => Buffer.from(s).toString('base64')

t.test('answers: plain strings, or base64 of every string but OK', async (t) => {
  const { ns } = await database()
  const key = api.key
  t.same((await raw(srv.url, ns, key, ['SET', 'k', 'héllo'])).json, { result: 'OK' })
  t.same((await raw(srv.url, ns, key, ['GET', 'k'])).json, { result: 'héllo' })
  t.same((await raw(srv.url, ns, key, ['GET', 'k'], B64)).json, { result: b64('héllo') })
  t.same((await raw(srv.url, ns, key, ['SET', 'k', 'x'], B64)).json, { result: 'OK' }, 'OK stays')
  t.same((await raw(srv.url, ns, key, ['GET', 'nope'], B64)).text, '{"result":null}', 'null')
  t.same((await raw(srv.url, ns, key, ['INCR', 'n'], B64)).text, '{"result":1}', 'integers')
  t.same((await raw(srv.url, ns, key, ['PING'], B64)).json, { result: b64('PONG') })
  t.same((await raw(srv.url, ns, key, ['TYPE', 'k'], B64)).json, { result: b64('string') })
  t.same((await raw(srv.url, ns, key, ['MGET', 'k', 'nope', 'n'], B64)).json, {
    result: [b64('x'), null, b64('1')],
  })
  const scan = await raw(srv.url, ns, key, ['SCAN', '0', 'COUNT', '1'], B64)
  const [cursor, keys] = scan.json.result
  t.type(cursor, 'string')
  t.not(Buffer.from(cursor, 'base64').toString(), '0', 'more to walk')
  t.same(keys, [b64('k')], 'the elements of arrays too')
  const next = Buffer.from(cursor, 'base64').toString()
  const last = await raw(srv.url, ns, key, ['SCAN', next, 'COUNT', '10'], B64)
  t.same(last.json.result, [b64('0'), [b64('n')]], 'the cursor is base64 too, "0" at the end')
})

t.test('arguments: JSON numbers and booleans mean their text, exactly as sent', async (t) => {
  const { ns } = await database()
  await raw(srv.url, ns, api.key, '["SET","big",12345678901234567890]')
  t.same((await raw(srv.url, ns, api.key, ['GET', 'big'])).json, { result: '12345678901234567890' })
  await raw(srv.url, ns, api.key, ['SET', 'b', true])
  t.same((await raw(srv.url, ns, api.key, ['GET', 'b'])).json, { result: 'true' })
  await raw(srv.url, ns, api.key, ['SET', 'e', 'v', 'ex', 100])
  const ttl = (await raw(srv.url, ns, api.key, ['TTL', 'e'])).json.result
  t.ok(ttl > 90 && ttl <= 100, 'options are case-insensitive and take numbers')
  await raw(srv.url, ns, api.key, ['set', 'o', { a: 1 }])
  t.same(
    (await raw(srv.url, ns, api.key, ['get', 'o'])).json,
    { result: '{"a":1}' },
    'an object as its JSON text',
  )
})

t.test('a pipeline answers one entry per command; a failing one fails alone', async (t) => {
  const { ns } = await database()
  const res = await raw(srv.url, `${ns}/pipeline`, api.key, [
    ['SET', 'w', 'word'],
    ['INCR', 'w'],
    ['GET', 'w'],
    ['NOPE'],
    [],
    ['INCR', 'n'],
  ])
  t.equal(res.status, 200)
  t.same(res.json, [
    { result: 'OK' },
    { error: 'ERR value is not an integer or out of range' },
    { result: 'word' },
    { error: "ERR unknown command 'NOPE'" },
    { error: 'ERR a command may not be empty' },
    { result: 1 },
  ])
  t.equal(typeof res.json[1].error, 'string')
  const redis = redisFor(srv.url, ns, api.key)
  const p = redis.pipeline()
  p.set('a', 1)
  p.incr('a')
  p.get('a')
  t.same(await p.exec(), ['OK', 2, 2], 'the client reads it back')
})

t.test('multi-exec applies all or nothing', async (t) => {
  const { ns, redis } = await database()
  const tx = redis.multi()
  tx.set('a', 'x')
  tx.incr('n')
  tx.incr('n')
  tx.get('a')
  tx.mget('a', 'n')
  t.same(await tx.exec(), ['OK', 1, 2, 'x', ['x', 2]], 'later commands see earlier ones')
  await redis.set('word', 'abc')
  const failed = await raw(srv.url, `${ns}/multi-exec`, api.key, [
    ['SET', 'b', '1'],
    ['DEL', 'a'],
    ['INCR', 'word'],
    ['SET', 'c', '1'],
  ])
  t.equal(failed.status, 400)
  t.type(failed.json.error, 'string')
  t.match(
    failed.json.error,
    /^ERR command 3 \(incr\) failed, nothing was applied: value is not an integer/,
  )
  t.same(await redis.mget('a', 'b', 'c'), ['x', null, null], 'nothing applied')
  const unknown = await raw(srv.url, `${ns}/multi-exec`, api.key, [
    ['SET', 'b', '1'],
    ['HSET', 'h', 'a', 'b'],
  ])
  t.equal(unknown.status, 400)
  t.equal(await redis.exists('b'), 0)
  const bad = redis.multi()
  bad.set('z', 1)
  bad.incr('word')
  await t.rejects(bad.exec(), /nothing was applied/)
  t.equal(await redis.get('z'), null)
})

t.test('multi-exec is isolated: concurrent read-modify-writes never lose one', async (t) => {
  const { redis } = await database()
  await redis.set('count', '0')
  const bump = async () => {
    const tx = redis.multi()
    tx.get('count')
    tx.append('log', '+')
    tx.incr('count')
    return tx.exec()
  }
  await Promise.all(Array.from({ length: 20 }, bump))
  t.equal(await redis.get('count'), 20)
  t.equal(await redis.strlen('log'), 20)
})

t.test('multi-exec with listings and FLUSHDB sees its own writes', async (t) => {
  const { redis } = await database()
  await redis.mset({ a: 1, b: 2 })
  const tx = redis.multi()
  tx.set('c', 3)
  tx.del('a')
  tx.keys('*')
  tx.dbsize()
  tx.scan(0, { count: 100 })
  tx.flushdb()
  tx.dbsize()
  tx.set('after', 1)
  const out = await tx.exec()
  t.same(out.slice(0, 4), ['OK', 1, ['b', 'c'], 2])
  t.same(out[4], ['0', ['b', 'c']])
  t.same(out.slice(5), ['OK', 0, 'OK'])
  t.same(await redis.keys('*'), ['after'])
})

t.test('the path form', async (t) => {
  const { ns } = await database()
  const set = await raw(srv.url, `${ns}/set/path%2Fkey/some%20value/EX/100`, api.key)
  t.same(set.json, { result: 'OK' })
  t.same((await raw(srv.url, `${ns}/get/path%2Fkey`, api.key)).json, { result: 'some value' })
  const ttl = (await raw(srv.url, `${ns}/ttl/path%2Fkey`, api.key)).json.result
  t.ok(ttl > 90 && ttl <= 100)
  const post = await raw(srv.url, `${ns}/set/fromBody`, api.key, 'the "body" is the value')
  t.same(post.json, { result: 'OK' }, 'a POST body is the last argument')
  t.same((await raw(srv.url, `${ns}/get/fromBody`, api.key)).json, {
    result: 'the "body" is the value',
  })
  t.same((await raw(srv.url, `${ns}/get/fromBody`, api.key, undefined, B64)).json, {
    result: b64('the "body" is the value'),
  })
  const bad = await raw(srv.url, `${ns}/incr/fromBody`, api.key)
  t.equal(bad.status, 400)
  t.same(bad.json, { error: 'ERR value is not an integer or out of range' })
})

t.test('errors are {"error": "<string>"} and the client shows them', async (t) => {
  const { ns, redis } = await database()
  const cases: [unknown, RegExp][] = [
    ['not json', /^ERR the body is not valid JSON/],
    [{ a: 1 }, /^ERR the body must be a JSON array/],
    [[], /^ERR a command may not be empty/],
    [['GET'], /^ERR wrong number of arguments for 'get' command/],
    [['GET', 'a', 'b'], /wrong number of arguments/],
    [['SET', 'k', 'v', 'EX'], /^ERR syntax error/],
    [['SET', 'k', 'v', 'NX', 'XX'], /^ERR syntax error/],
    [['SET', 'k', null], /^ERR an argument is null/],
    [['GET', 'bad\u0001key'], /^ERR invalid key/],
    [['GET', ''], /^ERR invalid key/],
    [['GET', 'x'.repeat(513)], /^ERR invalid key/],
    [['EXPIRE', 'k', '10', 'NX', 'XX'], /^ERR NX and XX, GT or LT options/],
    [['EXPIRE', 'k', '10', 'GT', 'LT'], /^ERR GT and LT options/],
    [['EXPIRE', 'k', '10', 'SOON'], /^ERR Unsupported option SOON/],
    [['INCRBY', 'k', '1.5'], /^ERR value is not an integer or out of range/],
    [['DECRBY', 'k', '-9223372036854775808'], /^ERR decrement would overflow/],
    [['SCAN', '0', 'COUNT', '0'], /^ERR syntax error/],
    [['FLUSHALL'], /^ERR unknown command 'FLUSHALL'/],
  ]
  for (const [body, want] of cases) {
    const res = await raw(srv.url, ns, api.key, body)
    t.equal(res.status, 400, JSON.stringify(body))
    t.type(res.json?.error, 'string')
    t.match(res.json.error, want)
  }
  const many = await raw(
    srv.url,
    `${ns}/pipeline`,
    api.key,
    Array.from({ length: 1001 }, () => ['PING']),
  )
  t.equal(many.status, 400)
  t.match(many.json.error, /at most 1000 commands/)
  const err = await redis.get('x'.repeat(600)).catch((e: Error) => e)
  t.match((err as Error).message, /ERR invalid key/, 'the message reaches the caller')
  t.notMatch((err as Error).message, /object Object/)
})

t.test('auth: 401 with a string, never the key', async (t) => {
  const { ns } = await database()
  const none = await raw(srv.url, ns, null, ['PING'])
  t.equal(none.status, 401)
  t.type(none.json.error, 'string')
  const wrong = await raw(srv.url, ns, 'cairn_00000000000000000000000000000000', ['PING'])
  t.equal(wrong.status, 401)
  t.type(wrong.json.error, 'string')
  const client = redisFor(srv.url, ns, 'cairn_00000000000000000000000000000000')
  await t.rejects(client.get('k'), /WRONGPASS/)
  const viaQuery = await fetch(`${srv.url}/upstash/${ns}/ping?_token=${api.key}`)
  t.equal(viaQuery.status, 200, 'the token may come as _token in the query')
})

t.test('permissions: a read key, a namespace-limited key, another account', async (t) => {
  const { ns, redis } = await database()
  const { ns: other } = await database()
  await redis.set('k', 'v')
  const ro = (
    await cli(srv, ['key', 'create', '--email', email, '--name', `ro${ns}`, '--permission', 'read'])
  ).secret
  const reader = redisFor(srv.url, ns, ro)
  t.equal(await reader.get('k'), 'v', 'a read key reads')
  t.same(await reader.mget('k', 'x'), ['v', null])
  await t.rejects(reader.set('k', 'w'), /NOPERM/)
  const single = await raw(srv.url, ns, ro, ['SET', 'k', 'w'])
  t.equal(single.status, 403)
  t.match(single.json.error, /^NOPERM /)
  const mixed = await raw(srv.url, `${ns}/pipeline`, ro, [['GET', 'k'], ['DEL', 'k'], ['FLUSHDB']])
  t.equal(mixed.status, 200)
  t.same(mixed.json[0], { result: 'v' })
  t.match(mixed.json[1].error, /^NOPERM/)
  t.match(mixed.json[2].error, /^NOPERM/)
  const multi = await raw(srv.url, `${ns}/multi-exec`, ro, [
    ['GET', 'k'],
    ['SET', 'k', 'w'],
  ])
  t.equal(multi.status, 403)
  t.equal(await redis.get('k'), 'v', 'nothing written')

  const scoped = (
    await cli(srv, ['key', 'create', '--email', email, '--name', `sc${ns}`, '--namespaces', ns])
  ).secret
  t.equal(await redisFor(srv.url, ns, scoped).get('k'), 'v')
  const elsewhere = await raw(srv.url, other, scoped, ['GET', 'k'])
  t.equal(elsewhere.status, 403)
  t.match(elsewhere.json.error, /^NOPERM .*namespace/)

  const stranger = await otherAccount(srv)
  const theirs = await raw(srv.url, ns, stranger.key, ['GET', 'k'])
  t.equal(theirs.status, 404, "another account's namespace is not there for them")
  t.type(theirs.json.error, 'string')
  t.notMatch(theirs.text, /"v"/)
  await stranger.createNamespace(ns)
  const own = redisFor(srv.url, ns, stranger.key)
  t.equal(await own.get('k'), null, 'the same name, their own data')
  await own.set('k', 'theirs')
  t.equal(await redis.get('k'), 'v')
  t.equal(await own.dbsize(), 1)

  const missing = await raw(srv.url, 'nosuchdb', api.key, ['GET', 'k'])
  t.equal(missing.status, 404)
  t.match(missing.json.error, /^ERR there is no namespace "nosuchdb"/)
})

t.test('the sync token: sent back, accepted, and CORS for the client', async (t) => {
  const { ns } = await database()
  const w = await raw(srv.url, ns, api.key, ['SET', 'k', 'v'])
  const token = w.headers.get('upstash-sync-token')
  t.match(token, /^\d+$/, 'an answer carries a sync token')
  const r = await raw(srv.url, ns, api.key, ['GET', 'k'], { 'upstash-sync-token': token! })
  t.equal(r.status, 200)
  t.equal(r.headers.get('upstash-sync-token'), token, 'a read answers the token it was given')
  const odd = await raw(srv.url, ns, api.key, ['GET', 'k'], {
    'upstash-sync-token': 'not: ours',
  })
  t.equal(odd.status, 200, 'a token not ours is accepted')
  t.match(odd.headers.get('upstash-sync-token'), /^\d+$/, 'and not echoed')

  const pre = await fetch(`${srv.url}/upstash/${ns}/pipeline`, {
    method: 'OPTIONS',
    headers: {
      origin: 'https://app.example',
      'access-control-request-method': 'POST',
      'access-control-request-headers':
        'authorization, content-type, upstash-encoding, upstash-sync-token, upstash-telemetry-sdk',
    },
  })
  t.equal(pre.status, 204)
  t.equal(pre.headers.get('access-control-allow-origin'), '*')
  const allowed = pre.headers.get('access-control-allow-headers')!.toLowerCase()
  for (const h of [
    'authorization',
    'content-type',
    'upstash-encoding',
    'upstash-sync-token',
    'upstash-telemetry-sdk',
  ])
    t.ok(allowed.includes(h), h)
  t.match(pre.headers.get('access-control-allow-methods'), /POST/)
  const cors = await raw(srv.url, ns, api.key, ['GET', 'k'], { origin: 'https://app.example' })
  t.equal(cors.headers.get('access-control-allow-origin'), '*')
  t.match(cors.headers.get('access-control-expose-headers'), /Upstash-Sync-Token/i)

  const wrong = await fetch(`${srv.url}/upstash/${ns}/pipeline`, {
    headers: { authorization: `Bearer ${api.key}` },
  })
  t.equal(wrong.status, 405)
  t.match(wrong.headers.get('allow'), /POST/)
  t.type(((await wrong.json()) as any).error, 'string')
})

t.test('values are shared with /v1', async (t) => {
  const { ns, redis } = await database()
  await api.mustPut(ns, 'num', 42)
  await api.mustPut(ns, 'obj', { a: [1, 2], b: 'x' })
  await api.mustPut(ns, 'str', '7')
  await api.mustPut(ns, 'big', 41)
  t.same(
    (await raw(srv.url, ns, api.key, ['GET', 'num'])).json,
    { result: '42' },
    'a JSON number reads as its text',
  )
  t.same((await raw(srv.url, ns, api.key, ['GET', 'obj'])).json, { result: '{"a":[1,2],"b":"x"}' })
  t.same(await redis.get('obj'), { a: [1, 2], b: 'x' })
  t.equal(await redis.strlen('num'), 2)

  await redis.set('hello', 'world')
  t.equal(
    (await api.get(`/${ns}/hello`)).text,
    '{"value":"world"}',
    'a string SET via Upstash is a JSON string',
  )
  await redis.set('n', 42)
  t.equal(
    (await api.get(`/${ns}/n`)).text,
    '{"value":"42"}',
    'a number SET via Upstash is the string "42"',
  )
  t.equal(await redis.incr('big'), 42, 'INCR on a JSON integer')
  t.equal((await api.get(`/${ns}/big`)).text, '{"value":42}', 'INCR stores an integer')
  t.equal(await redis.incr('str'), 8, 'INCR on a string of an integer')
  t.equal((await api.get(`/${ns}/str`)).text, '{"value":8}')
  await redis.expire('hello', 100)
  const got = await api.get(`/${ns}/hello`)
  const at = Number(got.headers['x-expires-at'])
  t.ok(at > Date.now() / 1000 + 90, 'an expiry set via Upstash is the entry TTL')
  await api.put(`/${ns}/meta`, { value: 'v', metadata: { owner: 'ana' } })
  await redis.append('meta', '!')
  t.same(
    (await api.get(`/${ns}/meta?metadata=1`)).json,
    { value: 'v!', metadata: { owner: 'ana' } },
    'APPEND keeps metadata',
  )
  t.same((await api.listAll(ns)).sort(), ['big', 'hello', 'meta', 'n', 'num', 'obj', 'str'])
})

t.test('usage counts each command as a request of operation upstash', async (t) => {
  const acct = await srv.createAccount()
  await fetch(`${srv.baseUrl}/namespaces`, {
    method: 'POST',
    headers: { 'x-api-key': acct.apiKey, 'content-type': 'application/json' },
    body: '{"name":"u"}',
  })
  await raw(srv.url, 'u', acct.apiKey, ['SET', 'a', '1'])
  await raw(srv.url, 'u/pipeline', acct.apiKey, [['GET', 'a'], ['INCR', 'a'], ['NOPE']])
  await raw(srv.url, 'u/multi-exec', acct.apiKey, [
    ['GET', 'a'],
    ['GET', 'b'],
  ])
  await raw(srv.url, 'u/get/a', acct.apiKey)
  const usage = await fetch(`${srv.baseUrl}/usage`, { headers: { 'x-api-key': acct.apiKey } })
  const body = (await usage.json()) as any
  const today = body.today
  t.equal(today.operations.upstash, 7, '1 + 3 + 2 + 1 commands')
  t.equal(today.requests, 7 + 1, 'plus the namespace creation')
  const u = body.namespaces.find((n: { name: string }) => n.name === 'u')
  t.equal(u?.today.operations.upstash, 7, 'and count to their namespace')
})

t.test('the rate limit and the daily quota count commands', async (t) => {
  const tiny = await srv.createAccount(undefined, { plan: 'tiny' })
  await fetch(`${srv.baseUrl}/namespaces`, {
    method: 'POST',
    headers: { 'x-api-key': tiny.apiKey, 'content-type': 'application/json' },
    body: '{"name":"r"}',
  })
  const big = await raw(
    srv.url,
    'r/pipeline',
    tiny.apiKey,
    Array.from({ length: 10 }, () => ['PING']),
  )
  t.equal(big.status, 429, 'ten commands need more tokens than the burst holds')
  t.type(big.json.error, 'string')
  t.match(big.headers.get('retry-after'), /^\d+$/)

  const daily = await srv.createAccount(undefined, { plan: 'daily' })
  await fetch(`${srv.baseUrl}/namespaces`, {
    method: 'POST',
    headers: { 'x-api-key': daily.apiKey, 'content-type': 'application/json' },
    body: '{"name":"q"}',
  })
  const four = await raw(srv.url, 'q/pipeline', daily.apiKey, [
    ['PING'],
    ['PING'],
    ['PING'],
    ['PING'],
  ])
  t.equal(four.status, 200)
  const two = await raw(srv.url, 'q/pipeline', daily.apiKey, [['PING'], ['PING']])
  t.equal(two.status, 429, 'these would pass the quota')
  t.match(two.json.error, /requests per UTC day/)
  t.equal((await raw(srv.url, 'q', daily.apiKey, ['PING'])).status, 200, 'the sixth fits')
  t.equal((await raw(srv.url, 'q', daily.apiKey, ['PING'])).status, 429)

  const small = await srv.createAccount(undefined, { plan: 'small' })
  await fetch(`${srv.baseUrl}/namespaces`, {
    method: 'POST',
    headers: { 'x-api-key': small.apiKey, 'content-type': 'application/json' },
    body: '{"name":"s"}',
  })
  const large = await raw(srv.url, 's', small.apiKey, ['SET', 'k', 'x'.repeat(200)])
  t.equal(large.status, 400)
  t.match(large.json.error, /^ERR the value is 202 bytes as JSON; the small plan allows 100/)
})
