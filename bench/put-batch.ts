// What coalescing a turn's PUTs to one namespace into one PUTS call (commands.ts) is worth,
// through the Redis store itself (no HTTP): W writers, each with one PUT in flight at a time
// over 1,000 existing keys, for S seconds, on a one-node Redis Cluster with appendfsync
// always. "one namespace": every writer writes the same namespace, so a turn's PUTs go as one
// call; "a namespace each": each writer its own, so every PUT is its own call (the same
// pipeline and group commit otherwise). Alternating rounds; medians.
//   node --import tsx bench/put-batch.ts [--writers W] [--seconds S] [--rounds R]
// Prints PUTs per second, script calls per PUT and Redis's microseconds per PUT
// (INFO commandstats: evalsha usec over PUTs).
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Redis } from 'ioredis'
import { openRedisStore } from '../server/store/cluster/index.js'
import { startRedis } from './http/servers.js'

const argv = process.argv.slice(2)
const opt = (name: string, def: number) =>
  argv.includes(name) ? Number(argv[argv.indexOf(name) + 1]) : def
const WRITERS = opt('--writers', 50)
const SECONDS = opt('--seconds', 5)
const ROUNDS = opt('--rounds', 3)
const VALUE = Buffer.from(JSON.stringify('v'.repeat(96)))

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-put-batch-'))
const redis = await startRedis(0, dir, 'cluster')
const store = await openRedisStore(`redis://127.0.0.1:${redis.port}`, { durability: 'always' })
const node = new Redis(redis.port, '127.0.0.1')

const shapes = ['one namespace', 'a namespace each'] as const
for (const shape of shapes)
  for (let w = 0; w < (shape === 'one namespace' ? 1 : WRITERS); w++) {
    const ns = `${shape === 'one namespace' ? 'one' : 'each'}-${w}`
    await store.createNamespace(ns)
    for (let k = 0; k < 1000; k += 100)
      await Promise.all(Array.from({ length: 100 }, (_, j) => store.put(ns, `k${k + j}`, VALUE)))
  }

async function round(shape: (typeof shapes)[number]) {
  await node.config('RESETSTAT')
  let puts = 0
  const end = Date.now() + SECONDS * 1000
  await Promise.all(
    Array.from({ length: WRITERS }, async (_, w) => {
      const ns = shape === 'one namespace' ? 'one-0' : `each-${w}`
      for (let i = w; Date.now() < end; i += WRITERS) {
        await store.put(ns, `k${i % 1000}`, VALUE)
        puts++
      }
    }),
  )
  const info = String(await node.info('commandstats'))
  const [, calls, usec] = /cmdstat_evalsha:calls=(\d+),usec=(\d+)/.exec(info) ?? []
  return {
    perSecond: puts / SECONDS,
    callsPerPut: Number(calls) / puts,
    usPerPut: Number(usec) / puts,
  }
}

const got = new Map(shapes.map((s) => [s, [] as Awaited<ReturnType<typeof round>>[]]))
for (let r = 0; r < ROUNDS; r++) for (const s of shapes) got.get(s)!.push(await round(s))
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
console.log(`shape | PUTs/s | script calls per PUT | Redis us per PUT | PUTs/s by round`)
for (const s of shapes) {
  const rs = got.get(s)!
  console.log(
    `${s} | ${median(rs.map((r) => r.perSecond)).toFixed(0)} | ${median(rs.map((r) => r.callsPerPut)).toFixed(3)} | ${median(rs.map((r) => r.usPerPut)).toFixed(2)} | ${rs.map((r) => r.perSecond.toFixed(0)).join(' / ')}`,
  )
}
node.disconnect()
await store.close()
await redis.stop()
fs.rmSync(dir, { recursive: true, force: true })
