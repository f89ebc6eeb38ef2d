// The /v1 contract suite, run again on Redis Cluster: every file of test/server/contract
// against front ends started with `--store` on a real cluster (the plain run covers the
// embedded engine). The same assertions pass on both, or the backends are not
// interchangeable. backends-client.test.ts does the same for the client and the dashboard.
import fs from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { runOnRedis } from '../helpers/on-redis.js'
import { root } from '../helpers/server.js'

const contract = fs
  .readdirSync(path.join(root, 'test/server/contract'))
  .filter((f) => f.endsWith('.test.ts'))
  .sort()
t.ok(contract.length >= 10, `the contract suite has its files (${contract.length})`)
await runOnRedis(
  t,
  contract.map((f) => `test/server/contract/${f}`),
)
