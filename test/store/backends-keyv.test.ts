// The Keyv store's tests and @keyv/test-suite, run again on Redis Cluster, as
// backends-client.test.ts does for the client's suite.
import t from 'tap'
import { runOnRedis } from '../helpers/on-redis.js'

await runOnRedis(t, ['test/client/keyv.test.ts', 'test/client/keyv-suite.test.ts'])
