// cairn-kv (cairn-kv.test.ts) again with the server on Redis Cluster: the same round trips,
// exit codes and watch, over the store most deployments run.
import t from 'tap'
import { runOnRedis } from '../helpers/on-redis.js'

await runOnRedis(t, ['test/client/cairn-kv.test.ts'])
