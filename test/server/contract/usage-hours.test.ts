// GET /usage by the hour and by namespace: after a known mix of requests (test/helpers/
// usage-tally.ts), the current hour and the namespaces hold exactly what was sent, 429s
// apart and 401s nowhere. backends.test.ts runs this file again on Redis Cluster. On the test
// clock no token comes back while the burst is spent, and the hour cannot turn mid-test.
import t from 'tap'
import {
  count,
  expected,
  expectedNamespaces,
  namespacesOf,
  newTally,
  sendMix,
  sumHours,
  withoutUsage,
} from '../../helpers/usage-tally.js'
import { Client } from './http.js'
import { plansFile, setup } from './setup.js'
import { watch } from './sse.js'

const { srv } = await setup(t, {
  plans: plansFile({ id: 'tight', ratePerSecond: 1, burst: 60 }),
  testClock: true,
})

const hourName = (ms: number) => `${new Date(ms).toISOString().slice(0, 13)}:00:00Z`

t.test('hours and namespaces count a known mix exactly', async (t) => {
  const made = await srv.createAccount(undefined, { plan: 'tight' })
  const api = new Client(srv.baseUrl, made.apiKey)
  const tally = newTally()
  const startHour = hourName(await srv.now())
  await sendMix(tally, [api])
  // A watch is one request to its namespace; its events are not requests.
  const w = await watch(srv.baseUrl, '/a?watch=1', made.apiKey)
  await w.until(1)
  w.close()
  count(tally, { status: 200 } as never, 'watch', 'a')
  // Past the burst: 429s count as rateLimited, to no operation and no namespace.
  let refused = 0
  for (let i = 0; i < 200 && refused < 3; i++) {
    const res = count(tally, await api.get('/a/k0'), 'get', 'a')
    if (res.status === 429) refused++
  }
  t.equal(refused, 3, 'the burst ran out')
  let res = await api.get('/usage')
  while (res.status === 429) {
    count(tally, res, 'usage')
    // One token a second comes back.
    await srv.passTime(1000)
    res = await api.get('/usage')
  }
  t.equal(res.status, 200)
  const u = res.json
  const endHour = hourName(await srv.now())

  t.equal(u.hours.length, 48, '48 hours')
  t.equal(u.hours[47].hour, endHour, 'the current hour last')
  const starts = u.hours.map((h: any) => Date.parse(h.hour))
  t.ok(
    starts.every((s: number, i: number) => i === 0 || s - starts[i - 1] === 3_600_000),
    'consecutive UTC hours, oldest first',
  )
  t.same(Object.keys(u.hours[0]).sort(), [
    'errors',
    'hour',
    'operations',
    'rateLimited',
    'requests',
  ])
  t.same(sumHours(u.hours), expected(tally), 'the hours add up to exactly what was sent')
  if (startHour === endHour)
    t.same(withoutUsage(u.hours[47]), expected(tally), 'all of it in the current hour')
  t.same(withoutUsage(u.today), expected(tally), 'and so does the day')

  t.same(
    u.namespaces.map((n: any) => n.name),
    ['a', 'b'],
  )
  for (const n of u.namespaces) {
    t.same(Object.keys(n).sort(), ['bytes', 'historyBytes', 'keys', 'name', 'today'])
    // What history holds is checked in history.test.ts; here only its form.
    t.ok(Number.isSafeInteger(n.historyBytes) && n.historyBytes >= 0, 'historyBytes is a count')
    const sum = Object.values(n.today.operations as Record<string, number>).reduce(
      (x, y) => x + y,
      0,
    )
    t.equal(n.today.requests, sum, `${n.name}: its operations add up to its requests`)
  }
  t.same(namespacesOf(u.namespaces), expectedNamespaces(tally, ['gone']), 'per namespace')
  t.same(
    u.namespaces.map((n: any) => [n.keys, n.bytes > 0]),
    [
      [2, true],
      [1, true],
    ],
    'with their storage',
  )
})

t.test("another account's requests count only to it", async (t) => {
  const one = new Client(srv.baseUrl, (await srv.createAccount()).apiKey)
  const two = new Client(srv.baseUrl, (await srv.createAccount()).apiKey)
  await one.createNamespace('same')
  await two.createNamespace('same')
  for (let i = 0; i < 5; i++) await one.put(`/same/k${i}`, { value: i })
  const u = (await two.get('/usage')).json
  t.same(namespacesOf(u.namespaces), { same: { requests: 1, operations: { namespace: 1 } } })
  t.equal(sumHours(u.hours).requests, 1)
})
