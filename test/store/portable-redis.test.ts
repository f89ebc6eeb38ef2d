// Ranges, counts, export and import (test/server/portable) run again on Redis Cluster: the
// same assertions, against front ends started with `--store` on a real cluster.
import fs from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { runOnRedis } from '../helpers/on-redis.js'
import { root } from '../helpers/server.js'

const only = process.env.CAIRN_PORTABLE_ONLY
const files = fs
  .readdirSync(path.join(root, 'test/server/portable'))
  .filter((f) => f.endsWith('.test.ts') && (only === undefined || f.startsWith(only)))
  .sort()
t.ok(files.length >= 1, `the portable suite has its files (${files.length})`)
await runOnRedis(
  t,
  files.map((f) => `test/server/portable/${f}`),
)
