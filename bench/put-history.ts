// What history costs a Redis PUT, and what it holds in memory: the shipped PUT script on a
// namespace without a window, with one (a day, 64 MiB: every overwrite keeps its superseded
// version, nothing is trimmed yet) and with one whose bytes bound is reached (each PUT also
// trims the oldest), on fresh namespaces of a one-node Redis Cluster with appendfsync always,
// alternating rounds; then Redis's used_memory for 20,000 overwrites of 1,000 keys with and
// without a window, per version kept.
//   node --import tsx bench/put-history.ts [--puts N] [--rounds R]
// Prints Redis's own microseconds per call (INFO commandstats, usec_per_call), median of the
// rounds, each beside the window-off figure, and the PUTs a second the store made (the front
// end's side included), then the bytes per kept version.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Redis } from 'ioredis'
import { openRedisStore } from '../server/store/cluster/index.js'
import { startRedis } from './http/servers.js'

const argv = process.argv.slice(2)
const opt = (name: string, def: number) =>
  argv.includes(name) ? Number(argv[argv.indexOf(name) + 1]) : def
const PUTS = opt('--puts', 20_000)
const ROUNDS = opt('--rounds', 3)
const VALUE = Buffer.from(JSON.stringify('v'.repeat(96)))

const variants: [string, { seconds: number; bytes: number } | undefined][] = [
  ['window off', undefined],
  ['window on (1 day, 64 MiB)', { seconds: 86_400, bytes: 64 << 20 }],
  ['window on, bytes bound reached (trims every PUT)', { seconds: 86_400, bytes: 100_000 }],
]

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-put-history-'))
const redis = await startRedis(0, dir, 'cluster')
const store = await openRedisStore(`redis://127.0.0.1:${redis.port}`, { durability: 'always' })
const node = new Redis(redis.port, '127.0.0.1')

async function fill(ns: string, puts: number): Promise<void> {
  for (let i = 0; i < puts; i += 50) {
    const batch: Promise<unknown>[] = []
    for (let j = i; j < i + 50 && j < puts; j++) batch.push(store.put(ns, `k${j % 1000}`, VALUE))
    await Promise.all(batch)
  }
}

/** PUTs a second through the store (50 at a time, appendfsync always), per variant and round. */
const rates: number[][] = variants.map(() => [])

async function round(v: number, r: number): Promise<number> {
  const ns = `hist-${v}-${r}`
  await store.createNamespace(ns)
  const w = variants[v]![1]
  if (w) await store.history!.setWindow(ns, w)
  // The trimming variant starts past its bound, so every measured PUT trims.
  if (w && w.bytes < 1 << 20) await fill(ns, 3000)
  await node.config('RESETSTAT')
  const t0 = performance.now()
  await fill(ns, PUTS)
  rates[v]!.push(PUTS / ((performance.now() - t0) / 1000))
  const info = String(await node.info('commandstats'))
  return Number(/cmdstat_evalsha:calls=\d+,usec=\d+,usec_per_call=([\d.]+)/.exec(info)?.[1])
}

const per: number[][] = variants.map(() => [])
for (let r = 0; r < ROUNDS; r++)
  for (let v = 0; v < variants.length; v++) per[v]!.push(await round(v, r))
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const base = median(per[0]!)
const baseRate = median(rates[0]!)
console.log(
  'variant | us per PUT script call (Redis) | rounds | beside off | PUTs/s through the store | beside off',
)
for (let v = 0; v < variants.length; v++) {
  const m = median(per[v]!)
  const rate = median(rates[v]!)
  console.log(
    `${variants[v]![0]} | ${m.toFixed(2)} | ${per[v]!.map((x) => x.toFixed(2)).join(' / ')} | ${(m / base).toFixed(2)}x | ${rate.toFixed(0)} | ${(rate / baseRate).toFixed(2)}x`,
  )
}

const used = async () => {
  await node.call('MEMORY', 'PURGE')
  return Number(/used_memory:(\d+)/.exec(String(await node.info('memory')))?.[1])
}
const memory = async (w: { seconds: number; bytes: number } | undefined, ns: string) => {
  await store.createNamespace(ns)
  if (w) await store.history!.setWindow(ns, w)
  const before = await used()
  await fill(ns, 20_000)
  return (await used()) - before
}
const off = await memory(undefined, 'mem-off')
const on = await memory({ seconds: 86_400, bytes: 1 << 30 }, 'mem-on')
const kept = Number((await store.history!.window('mem-on')).bytes)
// Where it goes: the log, the time index, and the keys' kept states (MEMORY USAGE, sampled whole).
const usage = async (pattern: string) => {
  let sum = 0
  for (const k of (await node.keys(pattern)) as string[])
    sum += Number(await node.call('MEMORY', 'USAGE', k, 'SAMPLES', '0'))
  return sum
}
console.log(
  `memory by structure: log ${await usage('c:{n:mem-on}:*:h*:l')} B, times ${await usage('c:{n:mem-on}:*:h*:t')} B, kept states ${await usage('c:{n:mem-on}:*:h*:k:*')} B`,
)
const versions = 20_000 - 1000
console.log(
  `memory: without a window ${off} B, with ${on} B for ${versions} kept versions of ${VALUE.length + 4}-byte states (counted historyBytes ${kept}): ${((on - off) / versions).toFixed(0)} B per kept version`,
)
node.disconnect()
await store.close()
await redis.stop()
fs.rmSync(dir, { recursive: true, force: true })
