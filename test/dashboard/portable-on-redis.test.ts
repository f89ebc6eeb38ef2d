// The dashboard's export, import and restores (portable.test.ts) again with the server on
// Redis Cluster: the same downloads and uploads; history there is the present only.
import t from 'tap'
import { runOnRedis } from '../helpers/on-redis.js'

await runOnRedis(t, ['test/dashboard/portable.test.ts'])
