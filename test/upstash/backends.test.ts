// The /upstash suites run again on Redis Cluster: the same client, the same assertions,
// against front ends started with `--store` on a real cluster (the plain run covers the
// embedded engine).
import t from 'tap'
import { runOnRedis } from '../helpers/on-redis.js'

await runOnRedis(
  t,
  ['commands', 'wire', 'unstorage'].map((f) => `test/upstash/${f}.test.ts`),
)
