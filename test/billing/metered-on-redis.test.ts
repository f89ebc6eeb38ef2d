// The metered plan tests again, with every server on Redis Cluster.
import t from 'tap'
import { runOnRedis } from '../helpers/on-redis.js'

await runOnRedis(t, ['test/billing/metered.test.ts'])
