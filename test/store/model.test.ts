// The storage seam's shared suite, one file per operation under suite/ (in the manner of
// abstract-level's shared suite): entries against a model, transactions, the change feed,
// records, token buckets and what the backend says it supports, on the embedded engine and
// on a real Redis Cluster. A third backend runs the same and sees by name what it fails. A failure of the random entries
// suite prints its seed: rerun with CAIRN_SEED=<seed>.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import t, { type Test } from 'tap'
import { openStore } from '../../server/store/open.js'
import type { Store } from '../../server/store/types.js'
import { clusterFor } from '../helpers/redis-cluster.js'
import { entriesSuite } from './suite/entries.js'
import { feedSuite } from './suite/feed.js'
import { limiterSuite } from './suite/limiter.js'
import { recordsSuite } from './suite/records.js'
import { supportsSuite } from './suite/supports.js'
import { transactSuite } from './suite/transact.js'

const seed = Number(process.env.CAIRN_SEED) || Math.floor(Math.random() * 2 ** 31)

async function everySuite(t: Test, store: Store): Promise<void> {
  await t.test('entries', (t) => entriesSuite(t, store, seed))
  await t.test('transact', (t) => transactSuite(t, store))
  await t.test('feed', (t) => feedSuite(t, store))
  await t.test('records', (t) => recordsSuite(t, store))
  await t.test('limiter', (t) => limiterSuite(t, store))
  await t.test('supports', (t) => supportsSuite(t, store))
}

t.test('embedded engine', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-model-'))
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }))
  const store = await openStore({ dataDir: dir, durability: 'none' })
  t.teardown(() => store.close())
  await everySuite(t, store)
})

t.test('Redis Cluster', async (t) => {
  const cluster = await clusterFor(t)
  if (!cluster) return
  const store = await openStore({ dataDir: '', store: cluster.url, durability: 'always' })
  t.teardown(() => store.close())
  await everySuite(t, store)
})
