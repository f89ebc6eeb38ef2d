// Runs test files again on Redis Cluster: each file in a child process whose test servers
// start with `--store` on one real cluster (CAIRN_TEST_STORE, read by helpers/server.ts).
import path from 'node:path'
import type { Test } from 'tap'
import { clusterFor } from './redis-cluster.js'
import { root } from './server.js'

export async function runOnRedis(t: Test, files: string[]): Promise<void> {
  const cluster = await clusterFor(t)
  if (!cluster) return
  for (const f of files) {
    t.spawn(process.execPath, ['--import', 'tsx', path.join(root, f)], {
      name: `on Redis: ${f}`,
      cwd: root,
      env: { ...process.env, CAIRN_TEST_STORE: cluster.url },
    })
  }
}
