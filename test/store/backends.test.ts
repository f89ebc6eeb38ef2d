// The /v1 contract suite, run again on Redis Cluster: every file of test/server/contract
// against front ends started with `--store` on a real cluster (the plain run covers the
// embedded engine). The same assertions pass on both, or the backends are not
// interchangeable.
import fs from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { type RedisCluster, startRedisCluster } from '../helpers/redis-cluster.js'
import { root } from '../helpers/server.js'

const started = await startRedisCluster()
if (typeof started === 'string') {
  t.skip(started)
} else {
  const cluster: RedisCluster = started
  t.teardown(() => cluster.stop())
  const dir = path.join(root, 'test/server/contract')
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.test.ts'))
  t.ok(files.length >= 10, `the contract suite has its files (${files.length})`)
  for (const f of files.sort()) {
    t.spawn(process.execPath, ['--import', 'tsx', path.join(dir, f)], {
      name: `on Redis: ${f}`,
      cwd: root,
      env: { ...process.env, CAIRN_TEST_STORE: cluster.url },
    })
  }
}
