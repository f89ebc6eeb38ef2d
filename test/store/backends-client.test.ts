// The client's suite and the dashboard's data browser and journey (in a real browser), run
// again on Redis Cluster, as backends.test.ts does for the /v1 contract.
import t from 'tap'
import { runOnRedis } from '../helpers/on-redis.js'

await runOnRedis(t, [
  ...[
    'errors',
    'keys',
    'methods',
    'retry',
    'timeout',
    'additions',
    'watch',
    'history',
    'portable',
  ].map((f) => `test/client/${f}.test.ts`),
  'test/dashboard/data.test.ts',
  'test/dashboard/journey.test.ts',
  'test/dashboard/usage-live.test.ts',
])
