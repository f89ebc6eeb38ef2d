// Usage.hourly(): the last hours of an account, oldest first, for other services to build on
// (billing). Counted through the Usage service on a real store; on Redis Cluster, counted by
// one front end's services and read by another's.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import t, { type Test } from 'tap'
import { PlanBook } from '../../server/services/plans.js'
import { OP } from '../../server/services/usage.js'
import { type Services, servicesOn } from '../../server/services/index.js'
import { openEmbeddedStore } from '../../server/store/embedded.js'
import { clusterFor } from '../helpers/redis-cluster.js'
import { twoStores } from '../helpers/two-stores.js'

const plans = PlanBook.load(path.join(import.meta.dirname, '../../server/plans.json'))
const hourName = (ms: number) => `${new Date(ms).toISOString().slice(0, 13)}:00:00Z`

async function check(t: Test, counter: Services, reader: Services) {
  const { account } = await counter.accounts.create({ email: `h${Date.now()}@example.com` })
  const now = Date.now()
  counter.usage.record(account.id, OP.put, 201, 10, 10, now)
  counter.usage.record(account.id, OP.get, 404, 10, 10, now)
  counter.usage.record(account.id, OP.transaction, 200, 10, 10, now, 4)
  counter.usage.record(account.id, OP.get, 429, 10, 10, now)
  await counter.usage.flush()
  const hours = await reader.usage.hourly(account.id, 3)
  t.equal(hours.length, 3)
  t.same(
    hours.map((h) => h.hour),
    [now - 7_200_000, now - 3_600_000, now].map(hourName),
  )
  const last = hours[2]!
  if (last.hour === hourName(Date.now())) {
    t.match(last, { requests: 6, errors: 1, rateLimited: 1 })
    t.match(last.operations, { put: 1, get: 1, transaction: 4, delete: 0 })
    t.same(
      hours.slice(0, 2).map((h) => h.requests),
      [0, 0],
    )
  }
  t.same(await reader.usage.hourly(account.id, 0), [], 'no hours asked, none given')
}

t.test('embedded', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-hourly-'))
  const store = await openEmbeddedStore(dir, 'always')
  t.teardown(async () => {
    await store.close()
    fs.rmSync(dir, { recursive: true, force: true })
  })
  const svc = await servicesOn(store, plans)
  await check(t, svc, svc)
})

const cluster = await clusterFor(t)
if (cluster) {
  t.test('Redis Cluster, counted on one front end and read on another', async (t) => {
    const [one, two] = await twoStores(t, cluster)
    await check(t, await servicesOn(one, plans), await servicesOn(two, plans))
  })
}
