// cairn-kv's history and restores (cairn-kv-history.test.ts) again with the server on Redis
// Cluster, a file of its own so that each stays inside the test timeout on a busy machine.
import t from 'tap'
import { runOnRedis } from '../helpers/on-redis.js'

await runOnRedis(t, ['test/client/cairn-kv-history.test.ts'])
