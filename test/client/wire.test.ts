// What the client's additions put on the wire and how they read the answers, checked
// against a scripted HTTP server on a real port that answers as the contract says: request
// methods, paths, headers and bodies byte for byte, exact integers in answers, and error
// objects with `index`. It needs no new server, so it runs today; additions.test.ts runs the
// same methods against the real one.
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import {
  Cairn,
  ConflictError,
  HistoryExpiredError,
  InvalidTransactionError,
  NotANumberError,
  TransactionTooLargeError,
} from '../../client/src/index.js'

interface Seen {
  method: string
  url: string
  headers: http.IncomingHttpHeaders
  body: string
}

type Answer = { status: number; body: string; headers?: Record<string, string> }

async function scripted(t: { teardown(fn: () => unknown): void }, answers: Answer[]) {
  const seen: Seen[] = []
  const srv = http.createServer((req, res) => {
    let body = ''
    req.setEncoding('utf8')
    req.on('data', (c: string) => {
      body += c
    })
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body })
      const a = answers.shift() ?? { status: 500, body: '{"error":{"code":"x","message":"x"}}' }
      res.writeHead(a.status, { 'content-type': 'application/json', ...a.headers })
      res.end(a.body)
    })
  })
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise((r) => srv.close(r)))
  const kv = new Cairn('cairn_test', {
    baseUrl: `http://127.0.0.1:${(srv.address() as AddressInfo).port}/v1`,
    retries: false,
  })
  return { kv, seen }
}

t.test('metadata, patch and increment on the wire', async (t) => {
  const { kv, seen } = await scripted(t, [
    { status: 201, body: '{"created":true,"version":"1"}', headers: { etag: '"1"' } },
    {
      status: 200,
      body: '{"value":{"n":12345678901234567890},"metadata":{"m":98765432109876543210}}',
      headers: { etag: '"1"', 'x-expires-at': '1900000000' },
    },
    { status: 201, body: '{"version":"2","value":12345678901234567891}', headers: { etag: '"2"' } },
    { status: 200, body: '{"version":"3","value":7}' },
    { status: 200, body: '{"version":"4"}' },
    { status: 409, body: '{"error":{"code":"not_a_number","message":"Not an integer."}}' },
  ])
  await kv.put('ns', 'a/b', { n: 1 }, { metadata: { m: 1 }, ttl: 60, ifNoneMatch: '*' })
  t.match(seen[0], {
    method: 'PUT',
    url: '/v1/ns/a%2Fb',
    body: '{"value":{"n":1},"ttl":60,"metadata":{"m":1}}',
  })
  t.equal(seen[0]!.headers['if-none-match'], '*')

  const hit = await kv.getWithMetadata('ns', 'k')
  t.match(seen[1], { method: 'GET', url: '/v1/ns/k?metadata=1' })
  t.same(hit, {
    value: { n: 12345678901234567890n },
    metadata: { m: 98765432109876543210n },
    version: '1',
    expiresAt: 1900000000,
  })

  const p = await kv.patch('ns', 'c', { increment: 12345678901234567890n })
  t.match(seen[2], { method: 'PATCH', url: '/v1/ns/c', body: '{"increment":12345678901234567890}' })
  t.same(p, { created: true, version: '2', value: 12345678901234567891n }, '201: created')

  t.equal(await kv.increment('ns', 'c', '-3', { ifMatch: '2' }), 7n)
  t.equal(seen[3]!.body, '{"increment":-3}')
  t.equal(seen[3]!.headers['if-match'], '"2"')

  const at = new Date(1_900_000_000_500)
  t.same(await kv.patch('ns', 'c', { expiresAt: at, metadata: null }), {
    created: false,
    version: '4',
  })
  t.equal(seen[4]!.body, '{"expiresAt":1900000001,"metadata":null}')

  await t.rejects(kv.increment('ns', 'c'), NotANumberError)
  t.equal(seen.length, 6, 'refusals before sending sent nothing')
})

t.test('transactions on the wire', async (t) => {
  const { kv, seen } = await scripted(t, [
    {
      status: 200,
      body:
        '{"version":"12","results":[{},{"found":true,"value":{"big":12345678901234567890},"version":"9","metadata":null},' +
        '{"found":false},{"created":true,"version":"10"},{"deleted":true},{"value":9007199254740993,"version":"12"}]}',
    },
    {
      status: 412,
      body: '{"error":{"code":"precondition_failed","message":"Changed.","index":2}}',
    },
    {
      status: 400,
      body: '{"error":{"code":"invalid_transaction","message":"Twice.","index":1}}',
    },
    { status: 413, body: '{"error":{"code":"transaction_too_large","message":"Big."}}' },
  ])
  const r = await kv
    .transaction('ns')
    .check('a', '"7"')
    .get('b', { metadata: true })
    .get('c')
    .put('d', [1n << 64n], { ttl: 5, metadata: { x: 1 }, ifNoneMatch: '*' })
    .delete('e', { ifMatch: '8' })
    .increment('f', '9007199254740993')
    .commit()
  t.match(seen[0], { method: 'POST', url: '/v1/ns' })
  t.equal(
    seen[0]!.body,
    '{"ops":[{"op":"check","key":"a","version":"7"},{"op":"get","key":"b","metadata":true},' +
      '{"op":"get","key":"c"},{"op":"put","key":"d","value":[18446744073709551616],"ttl":5,' +
      '"metadata":{"x":1},"ifNoneMatch":"*"},{"op":"delete","key":"e","ifMatch":"8"},' +
      '{"op":"increment","key":"f","by":9007199254740993}]}',
  )
  t.same(r, {
    version: '12',
    results: [
      {},
      { found: true, value: { big: 12345678901234567890n }, version: '9', metadata: null },
      { found: false },
      { created: true, version: '10' },
      { deleted: true },
      { value: 9007199254740993n, version: '12' },
    ],
  })

  const conflict = await kv
    .transaction('ns')
    .put('a', 1)
    .put('b', 2)
    .check('c', null)
    .commit()
    .catch((e) => e)
  t.ok(conflict instanceof ConflictError)
  t.match(conflict, { status: 412, code: 'precondition_failed', index: 2 })
  t.equal(seen[1]!.body.includes('"version":null'), true, 'check null is sent as null')
  const twice = await kv
    .transaction('ns')
    .put('a', 1)
    .delete('a')
    .commit()
    .catch((e) => e)
  t.ok(twice instanceof InvalidTransactionError)
  t.equal(twice.index, 1)
  await t.rejects(kv.transaction('ns').put('a', 1).commit(), TransactionTooLargeError)
})

t.test('listings and deletePrefix on the wire', async (t) => {
  const { kv, seen } = await scripted(t, [
    { status: 200, body: '{"keys":["b","a"],"cursor":"c1","version":"41"}' },
    {
      status: 200,
      body:
        '{"entries":[{"key":"b","version":"40","value":12345678901234567890,"metadata":null},' +
        '{"key":"a","version":"3","expiresAt":1900000000,"value":[],"metadata":{"m":1}}],"cursor":"c2","version":"41"}',
    },
    {
      status: 200,
      body: '{"entries":[{"key":"0","version":"2","value":0,"metadata":null}],"version":"41"}',
    },
    { status: 200, body: '{"deleted":3}' },
  ])
  t.same(await kv.list('ns', { prefix: 'p q', reverse: true, limit: 2 }), {
    keys: ['b', 'a'],
    cursor: 'c1',
    version: '41',
  })
  t.equal(seen[0]!.url, '/v1/ns?prefix=p%20q&limit=2&reverse=1')

  const all = []
  for await (const e of kv.entries('ns', { include: ['values', 'metadata'], reverse: true })) {
    all.push(e)
  }
  t.same(all, [
    { key: 'b', version: '40', value: 12345678901234567890n, metadata: null },
    { key: 'a', version: '3', expiresAt: 1900000000, value: [], metadata: { m: 1 } },
    { key: '0', version: '2', value: 0, metadata: null },
  ])
  t.equal(seen[1]!.url, '/v1/ns?include=values%2Cmetadata&reverse=1')
  t.equal(seen[2]!.url, '/v1/ns?cursor=c2&include=values%2Cmetadata&reverse=1')

  t.equal(await kv.deletePrefix('ns', 'user/42/'), 3)
  t.match(seen[3], { method: 'DELETE', url: '/v1/ns?prefix=user%2F42%2F' })
})

t.test('a watch refused with 410', async (t) => {
  const { kv, seen } = await scripted(t, [
    { status: 410, body: '{"error":{"code":"history_expired","message":"Too old."}}' },
  ])
  await t.rejects(kv.watch('ns', { since: '3', prefix: 'a' }).next(), HistoryExpiredError)
  t.equal(seen[0]!.url, '/v1/ns?watch=1&prefix=a&since=3')
})
