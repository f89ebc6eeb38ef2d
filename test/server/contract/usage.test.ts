// GET /usage: the plan, today's counters by operation, errors, bytes, storage and 30 days;
// counters survive a restart.
import t from 'tap'
import { Client } from './http.js'
import { plansFile, setup } from './setup.js'

const { srv, api } = await setup(t, { plans: plansFile({ id: 'daily', requestsPerDay: 100 }) })

function today(): string {
  return new Date().toISOString().slice(0, 10)
}

t.test('usage counts what was sent', async (t) => {
  await api.createNamespace('u')
  const bodies = [{ value: 'a' }, { value: [1, 2, 3] }, { value: { x: 'y' } }]
  let bytesIn = 0
  for (const [i, b] of bodies.entries()) {
    bytesIn += Buffer.byteLength(JSON.stringify(b))
    await api.put(`/u/k${i}`, b)
  }
  await api.get('/u/k0')
  await api.get('/u/k1')
  await api.get('/u/missing') // a 404: one error
  await api.get('/u')
  await api.del('/u/k2')
  await api.get('/namespaces')
  const res = await api.get('/usage')
  t.equal(res.status, 200)
  const u = res.json
  t.same(Object.keys(u).sort(), ['days', 'hours', 'namespaces', 'plan', 'storage', 'today'])
  t.equal(u.plan.id, 'free')
  t.equal(u.plan.maxValueBytes, 1024 * 1024)
  t.equal(u.today.date, today())
  const ops = u.today.operations
  t.equal(ops.put, 3)
  t.equal(ops.get, 3)
  t.equal(ops.list, 1)
  t.equal(ops.delete, 1)
  t.equal(ops.namespace, 2, 'create and list namespaces')
  t.ok(ops.usage === 0 || ops.usage === 1, 'this usage request counted or not yet')
  const sum = ops.get + ops.put + ops.delete + ops.list + ops.namespace + ops.usage
  t.equal(u.today.requests, sum, 'requests is the sum of operations')
  t.equal(u.today.errors, 1, 'the 404')
  t.equal(u.today.rateLimited, 0)
  t.ok(u.today.bytesIn >= bytesIn, `bytesIn ${u.today.bytesIn} >= ${bytesIn}`)
  t.ok(u.today.bytesOut > 0)
  t.equal(u.today.quotaRemaining, null, 'the test plan has no daily quota')
  t.equal(u.storage.keys, 2)
  t.ok(u.storage.bytes > 0)
  t.same(
    u.storage.namespaces.map((n: { name: string }) => n.name),
    ['u'],
  )
  t.equal(u.storage.namespaces[0].keys, 2)
  t.equal(u.days.length, 30)
  t.equal(u.days[29].date, today(), 'today is last')
  t.equal(u.days[29].requests, u.today.requests)
  const d0 = new Date(`${u.days[0].date}T00:00:00Z`).getTime()
  t.equal(
    (Date.parse(`${today()}T00:00:00Z`) - d0) / 86400000,
    29,
    'oldest first, 30 consecutive days',
  )
})

t.test('quotaRemaining counts down on a plan with a daily quota', async (t) => {
  const c = new Client(srv.baseUrl, (await srv.createAccount(undefined, { plan: 'daily' })).apiKey)
  await c.get('/namespaces')
  await c.get('/namespaces')
  const u = (await c.get('/usage')).json
  t.equal(u.plan.requestsPerDay, 100)
  t.equal(u.plan.maxStorageBytes, null, 'unlimited is null')
  t.ok(
    u.today.quotaRemaining === 97 || u.today.quotaRemaining === 98,
    `quotaRemaining ${u.today.quotaRemaining}`,
  )
})

t.test('counters survive a restart', async (t) => {
  const before = (await api.get('/usage')).json.today
  await srv.restart()
  const again = new Client(srv.baseUrl, api.key)
  const after = (await again.get('/usage')).json.today
  t.ok(after.requests >= before.requests, `requests ${after.requests} >= ${before.requests}`)
  t.ok(after.operations.put >= 3)
  t.equal((await again.get('/u/k0')).text, '{"value":"a"}', 'data survives too')
})

t.test('a report taken while counts are being written misses none of them', async (t) => {
  // Passes run back to back here, and reports are read while writes go on, so many reports
  // land while a pass is adding counts. A pass reads each namespace's size before it adds:
  // more namespaces, a longer pass.
  const busy = await setup(t, { env: { CAIRN_USAGE_FLUSH_MS: '1' } })
  for (let i = 0; i < 20; i++) await busy.api.createNamespace(`w${i}`)
  let acked = 0
  let done = false
  const short: string[] = []
  const reader = async () => {
    while (!done) {
      const before = acked
      const ops = (await busy.api.get('/usage')).json.today.operations
      if (ops.put < before) short.push(`${ops.put} of ${before}`)
    }
  }
  const readers = [reader(), reader()]
  for (let i = 1; i <= 200; i++) {
    t.equal((await busy.api.put(`/w${i % 20}/k${i}`, { value: i })).status, 201)
    acked = i
  }
  done = true
  await Promise.all(readers)
  t.same(short, [], 'every report counts every write acknowledged before it was asked for')
})
