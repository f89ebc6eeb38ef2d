// The contract's history tests, run again on Redis Cluster on their own (backends.test.ts
// runs them with the whole contract suite): reads at a point, a key's versions, listings at a
// point, restores, each plan's window, and a restore killed part way and sent again.
import t from 'tap'
import { runOnRedis } from '../helpers/on-redis.js'

await runOnRedis(t, [
  'test/server/contract/history.test.ts',
  'test/server/contract/history-plans.test.ts',
  'test/server/history-crash.test.ts',
])
