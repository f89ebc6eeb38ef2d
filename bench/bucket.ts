// What the shared token bucket on Redis costs (server/store/cluster/leased-bucket.ts), beside
// its peer, a script call per request (the same BUCKET script, no lease, no batching), in one
// run on a one-node Redis Cluster with two stores standing for two front ends:
//   node --import tsx bench/bucket.ts [--takes N]
// For each pattern it prints takes a second for both and their ratio, and Redis script calls
// per take. Patterns: one request at a time on one front end (a quiet client), 50 at a time
// spread over two front ends (a busy account), and a bucket kept near empty (the last-token
// path, where every take asks Redis).
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Cluster, Redis } from 'ioredis'
import { BUCKET } from '../server/store/cluster/record-scripts.js'
import { openRedisStore } from '../server/store/cluster/index.js'
import type { Bucket, Store } from '../server/store/types.js'
import { startRedis } from './http/servers.js'

const argv = process.argv.slice(2)
const TAKES = argv.includes('--takes') ? Number(argv[argv.indexOf('--takes') + 1]) : 20_000

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-bucket-bench-'))
const redis = await startRedis(0, dir, 'cluster')
const url = `redis://127.0.0.1:${redis.port}`
const stores: Store[] = [
  await openRedisStore(url, { durability: 'always' }),
  await openRedisStore(url, { durability: 'always' }),
]
const probe = new Cluster([{ host: '127.0.0.1', port: redis.port }])
const node = new Redis(redis.port, '127.0.0.1')
let seq = 0

const out = (): Bucket => ({ ok: false, limit: 0, remaining: 0, reset: 0, retryAfter: 0 })
const leased = (i: number, id: string, rate: number, burst: number) =>
  stores[i % 2]!.limiter.take(id, rate, burst, Date.now(), out())
/** The peer: every take one script call, as a limiter without leases or batching would. */
const perCall = (_i: number, id: string, rate: number, burst: number) =>
  probe.eval(BUCKET, 2, `c:{${id}}:bucket`, `c:{${id}}:bucket:peer.${++seq}`, rate, burst, 1, 0, 0)

async function scriptCalls(): Promise<number> {
  const info = String(await node.info('commandstats'))
  let n = 0
  for (const m of info.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)) n += Number(m[1])
  return n
}

type Take = (i: number, id: string, rate: number, burst: number) => Promise<unknown> | unknown

async function run(take: Take, id: string, rate: number, burst: number, parallel: number) {
  const before = await scriptCalls()
  const started = process.hrtime.bigint()
  let next = 0
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < TAKES) await take(next++, id, rate, burst)
    }),
  )
  const seconds = Number(process.hrtime.bigint() - started) / 1e9
  return { perSecond: TAKES / seconds, callsPerTake: ((await scriptCalls()) - before) / TAKES }
}

const patterns: [string, number, number, number][] = [
  // name, rate, burst, requests at once
  ['one at a time, one front end', 1_000_000, 1_000_000, 1],
  ['50 at a time, two front ends', 1_000_000, 1_000_000, 50],
  ['near empty (rate 1/s), 50 at a time', 1, 5, 50],
]
const single = async (i: number, id: string, rate: number, burst: number) =>
  leased(i * 2, id, rate, burst)
console.log('pattern | leased takes/s | per-call takes/s | ratio | script calls per take (leased)')
for (const [name, rate, burst, parallel] of patterns) {
  const ours = await run(parallel === 1 ? single : leased, `b${++seq}`, rate, burst, parallel)
  const peer = await run(perCall, `p${++seq}`, rate, burst, parallel)
  console.log(
    `${name} | ${ours.perSecond.toFixed(0)} | ${peer.perSecond.toFixed(0)} | ${(ours.perSecond / peer.perSecond).toFixed(2)}x | ${ours.callsPerTake.toFixed(4)}`,
  )
}
probe.disconnect()
node.disconnect()
for (const s of stores) await s.close()
await redis.stop()
fs.rmSync(dir, { recursive: true, force: true })
