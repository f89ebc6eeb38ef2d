// Plan limits: the token bucket (rate_limited), the daily quota (quota_exceeded), the
// storage quota (storage_quota_exceeded), with their headers.
import t from 'tap'
import { Client } from './http.js'
import { plansFile, setup } from './setup.js'

const { srv, api } = await setup(t, {
  plans: plansFile(
    { id: 'slow', ratePerSecond: 1, burst: 3 },
    { id: 'daily', requestsPerDay: 5 },
    { id: 'tiny', maxStorageBytes: 300 },
    { id: 'narrow', maxValueBytes: 20 },
  ),
})

async function accountOn(plan: string): Promise<Client> {
  const acct = await srv.createAccount(undefined, { plan })
  return new Client(srv.baseUrl, acct.apiKey)
}

t.test('RateLimit headers on every authenticated response', async (t) => {
  const ok = await api.get('/namespaces')
  const err = await api.get('/nosuchns/k')
  for (const res of [ok, err]) {
    t.match(res.headers['ratelimit-limit'], /^\d+$/)
    t.match(res.headers['ratelimit-remaining'], /^\d+$/)
    t.match(res.headers['ratelimit-reset'], /^\d+$/)
  }
  t.equal(ok.headers['ratelimit-limit'], '100000', 'RateLimit-Limit is the burst')
})

t.test('past the bucket: 429 rate_limited with Retry-After', async (t) => {
  const slow = await accountOn('slow')
  const first = await slow.get('/namespaces')
  t.equal(first.status, 200)
  t.equal(first.headers['ratelimit-limit'], '3')
  t.ok(Number(first.headers['ratelimit-remaining']) <= 2, 'the request took a token')
  // Ten at once from a bucket of three that refills one per second: some must be refused.
  const burst = await Promise.all(Array.from({ length: 10 }, () => slow.get('/namespaces')))
  const refused = burst.filter((r) => r.status === 429)
  t.ok(refused.length >= 1, `${refused.length} of 10 refused`)
  for (const res of refused) {
    t.equal(res.json?.error?.code, 'rate_limited')
    t.match(res.headers['retry-after'], /^[1-9]\d*$/, 'Retry-After in whole seconds, at least 1')
    t.equal(res.headers['ratelimit-remaining'], '0')
    t.match(res.headers['ratelimit-reset'], /^\d+$/)
  }
  const other = await api.get('/namespaces')
  t.equal(other.status, 200, "another account's bucket is its own")
})

t.test('past the daily quota: 429 quota_exceeded until UTC midnight', async (t) => {
  const daily = await accountOn('daily')
  const statuses: number[] = []
  for (let i = 0; i < 5; i++) statuses.push((await daily.get('/namespaces')).status)
  t.same(statuses, [200, 200, 200, 200, 200], 'five requests fit in the quota')
  const res = await daily.get('/namespaces')
  t.equal(res.status, 429)
  t.equal(res.json?.error?.code, 'quota_exceeded')
  const now = new Date()
  const midnight = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1)
  const expected = Math.ceil((midnight - now.getTime()) / 1000)
  const retry = Number(res.headers['retry-after'])
  t.ok(retry >= 1 && Math.abs(retry - expected) <= 120, `Retry-After ${retry} is about ${expected}`)
})

t.test('storage quota: writes past it are 403, reads and deletes keep working', async (t) => {
  const tiny = await accountOn('tiny')
  await tiny.createNamespace('s')
  const v = 'x'.repeat(100)
  const statuses: number[] = []
  let refused: Awaited<ReturnType<Client['put']>> | undefined
  for (let i = 0; i < 10 && !refused; i++) {
    const res = await tiny.put(`/s/k${i}`, { value: v })
    statuses.push(res.status)
    if (res.status === 403) refused = res
  }
  t.ok(refused, `a write was refused after ${statuses.length - 1} (statuses ${statuses})`)
  t.equal(refused?.json?.error?.code, 'storage_quota_exceeded')
  t.ok(statuses.length >= 2, 'at least one value fitted')
  const last = statuses.length - 1
  t.equal((await tiny.get(`/s/k${last}`)).status, 404, 'the refused write did not happen')
  t.equal((await tiny.get('/s/k0')).status, 200, 'reads still work')
  t.equal((await tiny.get('/s')).status, 200, 'lists still work')
  const replace = await tiny.put('/s/k0', { value: 'x'.repeat(2000) })
  t.equal(replace.status, 403, 'a replacement that grows past the quota is refused')
  t.equal((await tiny.get('/s/k0')).json.value, v, 'and leaves the old value')
  t.equal((await tiny.del('/s/k0')).status, 200, 'deletes still work')
  t.equal((await tiny.put('/s/small', { value: 1 })).status, 201, 'room again after a delete')
})

t.test('storage quota: increments, transactions and metadata are held to it too', async (t) => {
  const tiny = await accountOn('tiny')
  await tiny.createNamespace('q')
  t.equal((await tiny.put('/q/fill', { value: 'x'.repeat(240) })).status, 201, '246 of 300 bytes')
  const long = 'k'.repeat(60)
  const refused = (res: { status: number; json: any }, what: string) => {
    t.equal(res.status, 403, what)
    t.equal(res.json?.error?.code, 'storage_quota_exceeded', what)
  }
  refused(
    await tiny.req('PATCH', `/q/${long}`, { body: { increment: 1 } }),
    'an increment that would create a key past the quota',
  )
  refused(
    await tiny.post('/q', { ops: [{ op: 'increment', key: long, by: 1 }] }),
    "a transaction's increment the same",
  )
  t.equal((await tiny.get(`/q/${long}`)).status, 404, 'neither made the key')
  // Metadata counts where the store counts it in the account's bytes (the embedded engine
  // keeps it inside the value; Redis counts keys and values only): either way it never takes
  // the counted storage past the quota.
  const md = await tiny.req('PATCH', '/q/fill', { body: { metadata: { note: 'y'.repeat(100) } } })
  const stored = (await tiny.get('/q/fill?metadata=1')).json.metadata
  if (md.status === 403) {
    refused(md, 'metadata that would take the account past it')
    t.equal(stored, null, 'none was stored')
  } else {
    t.equal(md.status, 200, 'metadata the store does not count')
    t.same(stored, { note: 'y'.repeat(100) })
  }
  const small = await tiny.req('PATCH', '/q/n', { body: { increment: 1 } })
  t.equal(small.status, 201, 'a small counter still fits')
  const used = (await tiny.get('/usage')).json.storage.bytes
  t.ok(used <= 300, `the counted storage stays within the quota (${used} of 300 bytes)`)
})

t.test("an increment's result is a value: past maxValueBytes it is 413", async (t) => {
  const narrow = await accountOn('narrow')
  await narrow.createNamespace('v')
  t.equal((await narrow.put('/v/n', '{"value":99999999999999999999}')).status, 201, '20 digits')
  const patch = await narrow.req('PATCH', '/v/n', { body: { increment: 1 } })
  t.equal(patch.status, 413)
  t.equal(patch.json?.error?.code, 'value_too_large')
  const tx = await narrow.post('/v', {
    ops: [
      { op: 'put', key: 'other', value: 1 },
      { op: 'increment', key: 'n', by: 1 },
    ],
  })
  t.equal(tx.status, 413)
  t.match(tx.json?.error, { code: 'value_too_large', index: 1 })
  t.equal((await narrow.get('/v/n')).text, '{"value":99999999999999999999}', 'unchanged')
  t.equal((await narrow.get('/v/other')).status, 404, 'nothing of the transaction applied')
  const down = await narrow.req('PATCH', '/v/n', { body: { increment: -1 } })
  t.equal(down.status, 200, 'an increment that keeps it in bounds goes')
  const meta = { note: 'm'.repeat(1000) }
  const withMeta = await narrow.put('/v/m', { value: 1, metadata: meta })
  t.equal(
    withMeta.status,
    201,
    'a small value takes its 1 KiB of metadata, on a plan of small values',
  )
})
