// What each part of the Redis PUT script costs Redis, in one run: the script as shipped
// beside variants without its SPUBLISH, without its XADD (and SPUBLISH), and without the
// no-expiry skip of the prune (the ZRANGE ... BYSCORE every PUT made before), each on a
// fresh namespace of a one-node Redis Cluster with appendfsync always, alternating rounds.
//   node --import tsx bench/put-parts.ts [--puts N] [--rounds R]
// Prints Redis's own microseconds per call (INFO commandstats, usec_per_call) per variant,
// median of the rounds, and each beside the shipped script as a ratio; and the same PUTs
// sent as WRITES calls of --batch PUTs each (one turn's writes to one namespace, commands.ts),
// in microseconds per write.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Redis } from 'ioredis'
import { PUT, WRITES } from '../server/store/cluster/entry-scripts.js'
import { meta } from '../server/store/cluster/entries.js'
import { openRedisStore } from '../server/store/cluster/index.js'
import { startRedis } from './http/servers.js'

const argv = process.argv.slice(2)
const opt = (name: string, def: number) =>
  argv.includes(name) ? Number(argv[argv.indexOf(name) + 1]) : def
const PUTS = opt('--puts', 20_000)
const ROUNDS = opt('--rounds', 3)
const BATCH = opt('--batch', 10)
const VALUE = Buffer.from(JSON.stringify('v'.repeat(96)))

/** The script's one wake-up of the feed's watchers (WAKE in entry-scripts.ts). */
const SPUBLISH = "  if noted then redis.call('SPUBLISH', feed, '') end\n"
const cut = (lua: string, part: string) => {
  if (!lua.includes(part)) throw new Error(`the PUT script no longer has ${JSON.stringify(part)}`)
  return lua.split(part).join('')
}
const variants: [string, string][] = [
  ['shipped', PUT],
  ['without SPUBLISH', cut(PUT, SPUBLISH)],
  ['without XADD and SPUBLISH', cut(cut(PUT, SPUBLISH), 'redis.call(unpack(f))\n')],
  ['pruning every PUT (no nx skip)', cut(PUT, '  if mv[7] then return 0 end\n')],
  [`WRITES of ${BATCH} PUTs (per write)`, WRITES],
]
/** The variant sent as WRITES calls, BATCH PUTs a call. */
const BATCHED = variants.length - 1

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-put-parts-'))
const redis = await startRedis(0, dir, 'cluster')
const store = await openRedisStore(`redis://127.0.0.1:${redis.port}`, { durability: 'always' })
const node = new Redis(redis.port, '127.0.0.1')
const shas = await Promise.all(
  variants.map(([, lua]) => node.script('LOAD', lua) as Promise<string>),
)

async function round(v: number, r: number): Promise<number> {
  const ns = `parts-${v}-${r}`
  await store.createNamespace(ns)
  const m = meta(ns)
  await node.config('RESETSTAT')
  const each = v === BATCHED ? BATCH : 1
  for (let i = 0; i < PUTS; i += 50) {
    const p = node.pipeline()
    for (let j = i; j < i + 50 && j < PUTS; j += each) {
      const args: (string | number | Buffer)[] = []
      for (let w = j; w < j + each; w++) {
        if (v === BATCHED) args.push('p')
        args.push(`k${w % 1000}`, VALUE, Date.now(), '', '', '')
      }
      p.evalsha(shas[v]!, 1, m, ...args)
    }
    const res = await p.exec()
    const bad = res?.find(([err]) => err)
    if (bad) throw bad[0]
  }
  const info = String(await node.info('commandstats'))
  const perCall = Number(
    /cmdstat_evalsha:calls=\d+,usec=\d+,usec_per_call=([\d.]+)/.exec(info)?.[1],
  )
  return perCall / each
}

const per: number[][] = variants.map(() => [])
for (let r = 0; r < ROUNDS; r++)
  for (let v = 0; v < variants.length; v++) per[v]!.push(await round(v, r))
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const base = median(per[0]!)
console.log(`variant | us per call (Redis) | rounds | beside shipped`)
for (let v = 0; v < variants.length; v++) {
  const m = median(per[v]!)
  console.log(
    `${variants[v]![0]} | ${m.toFixed(2)} | ${per[v]!.map((x) => x.toFixed(2)).join(' / ')} | ${(m / base).toFixed(2)}x`,
  )
}
node.disconnect()
await store.close()
await redis.stop()
fs.rmSync(dir, { recursive: true, force: true })
