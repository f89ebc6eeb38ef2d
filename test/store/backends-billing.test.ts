// Paid plans through Stripe, run again on Redis Cluster, as backends.test.ts does for the
// /v1 contract: the event claims, customers and downgrades live in the store, so the same
// assertions must pass on both.
import t from 'tap'
import { runOnRedis } from '../helpers/on-redis.js'

await runOnRedis(t, [
  'test/billing/stripe.test.ts',
  'test/billing/downgrade.test.ts',
  'test/dashboard/billing.test.ts',
])
