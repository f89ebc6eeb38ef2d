// Cairn's PUT on Redis beside webdis's SET on the same Redis, and where each spends its CPU:
// a one-node Redis Cluster with its AOF fsynced on every write (as `npm run bench:http`'s
// group `redis`), Cairn with --store and webdis in front of it, all on core 0, wrk on core 1.
// Per side: requests per second, and CPU microseconds per request of the front end (Node, or
// webdis) and of redis-server apart, read from /proc over the measured seconds. On a loaded
// machine the requests per second drift with whatever else runs; the CPU per request much
// less, and it is what bounds the rate once the core is full. Also Redis's commands per
// request (INFO commandstats over the measured seconds): script calls, and the commands the
// scripts ran inside them.
//   node --import tsx bench/redis-put.ts [--seconds S] [--rounds R] [--keys N]
//       [--against DIR]      another checkout with dist/ built (say main's), measured as
//                            `before` beside this one, a round of each in turn
//       [--node-args "..."]  flags for this checkout's node (--cpu-prof --cpu-prof-dir=...)
// Rounds take turns (before, this, webdis; the next round the other way round); medians.
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { keyOf, writeScripts } from './http/scripts.js'
import { type Server, cpuSeconds, startCairn, startRedis, startWebdis } from './http/servers.js'
import { benchPlans, cairnAccount, seedCairnKeys, seedRedisKeys } from './http/setup.js'
import { runWrk } from './http/wrk.js'

const argv = process.argv.slice(2)
const opt = (name: string) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined)
const SECONDS = Number(opt('--seconds') ?? 5)
const ROUNDS = Number(opt('--rounds') ?? 3)
const KEYS = Number(opt('--keys') ?? 20_000)
const AGAINST = opt('--against')
const NODE_ARGS = (opt('--node-args') ?? '').split(' ').filter(Boolean)
const WARMUP = 2
const CONNECTIONS = 50
const VALUE = 'v'.repeat(96)
const SERVER_CORE = 0
const LOAD_CORE = 1

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-redis-put-'))
const redis = await startRedis(SERVER_CORE, dir, 'cluster')
const url = `redis://127.0.0.1:${redis.port}`
const plans = benchPlans(dir)
const keys = Array.from({ length: KEYS }, (_, n) => keyOf(Math.floor(n / 100), n % 100))
const groups = Math.ceil(KEYS / 100)

interface Side {
  name: string
  server: Server
  script: string
  rounds: { rps: number; frontUs: number; redisUs: number; scripts: number; commands: number }[]
}

/** Redis's commands since its counts were reset: script calls, and all others. */
function commands(port: number): { scripts: number; commands: number } {
  const info = execFileSync('redis-cli', ['-p', String(port), 'INFO', 'commandstats']).toString()
  let scripts = 0
  let others = 0
  for (const [, name, calls] of info.matchAll(/^cmdstat_(\S+?):calls=(\d+)/gm))
    if (name === 'evalsha' || name === 'eval') scripts += Number(calls)
    else others += Number(calls)
  return { scripts, commands: others }
}

const started: Server[] = []
try {
  const cairn = (from: string | undefined, name: string, nodeArgs: string[]) =>
    startCairn(
      SERVER_CORE,
      path.join(dir, `front-${name}`),
      plans,
      ['--store', url],
      nodeArgs,
      from,
    ).then((s) => {
      started.push(s)
      return s
    })
  const here = await cairn(undefined, 'this', NODE_ARGS)
  const apiKey = await cairnAccount(here.url, path.join(dir, 'front-this'), [
    '--store',
    url,
    '--plans',
    plans,
  ])
  process.stdout.write(`seeding ${KEYS} keys through Cairn, and for webdis\n`)
  await seedCairnKeys(here.url, apiKey, keys, VALUE)
  seedRedisKeys(redis.port, keys, VALUE)
  const webdis = await startWebdis(SERVER_CORE, dir, redis, 'webdis-redis')
  started.push(webdis)
  const s = writeScripts(path.join(dir, 'lua'), apiKey, { groups, value: VALUE })
  const sides: Side[] = []
  if (AGAINST !== undefined)
    sides.push({
      name: 'cairn before',
      server: await cairn(path.resolve(AGAINST), 'before', []),
      script: s.putExisting!,
      rounds: [],
    })
  sides.push({ name: 'cairn', server: here, script: s.putExisting!, rounds: [] })
  sides.push({ name: 'webdis SET', server: webdis, script: s.redisSet!, rounds: [] })

  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 === 0 ? sides : [...sides].reverse()
    for (const side of order) {
      const front = side.server.pids[0]!
      await runWrk({
        url: side.server.url,
        script: side.script,
        seconds: WARMUP,
        connections: CONNECTIONS,
        core: LOAD_CORE,
      })
      execFileSync('redis-cli', ['-p', String(redis.port), 'CONFIG', 'RESETSTAT'])
      const f0 = cpuSeconds(front)
      const r0 = cpuSeconds(redis.pid)
      const res = await runWrk({
        url: side.server.url,
        script: side.script,
        seconds: SECONDS,
        connections: CONNECTIONS,
        core: LOAD_CORE,
      })
      if (res.non2xx > 0 || res.errors > 0)
        throw new Error(`${side.name}: ${res.non2xx} non-2xx, ${res.errors} socket errors`)
      const us = (cpu: number) => (cpu * 1e6) / res.requests
      const round = {
        rps: res.rps,
        frontUs: us(cpuSeconds(front) - f0),
        redisUs: us(cpuSeconds(redis.pid) - r0),
        ...commands(redis.port),
      }
      round.scripts /= res.requests
      round.commands /= res.requests
      side.rounds.push(round)
      process.stdout.write(
        `  round ${r + 1} ${side.name}: ${Math.round(round.rps)} req/s, front end ${round.frontUs.toFixed(1)} us, Redis ${round.redisUs.toFixed(1)} us per request; per request ${round.scripts.toFixed(3)} script calls, ${round.commands.toFixed(2)} other commands\n`,
      )
    }
  }

  const median = (xs: number[]) => {
    const o = [...xs].sort((a, b) => a - b)
    const m = o.length >> 1
    return o.length % 2 ? o[m]! : (o[m - 1]! + o[m]!) / 2
  }
  const of = (side: Side, f: (x: Side['rounds'][number]) => number) => median(side.rounds.map(f))
  const peer = sides[sides.length - 1]!
  const load = os.loadavg().map((l) => l.toFixed(2))
  process.stdout.write(
    `\n${ROUNDS} rounds of ${SECONDS} s after ${WARMUP} s warm-ups, medians; ${KEYS} keys of ${VALUE.length} bytes; load average at the end ${load.join(', ')}\n\n| side | req/s | x webdis SET | front end CPU us/request | Redis CPU us/request | script calls/request | other Redis commands/request |\n|---|---:|---:|---:|---:|---:|---:|\n`,
  )
  for (const side of sides)
    process.stdout.write(
      `| ${side.name} | ${Math.round(of(side, (x) => x.rps))} | ${(of(side, (x) => x.rps) / of(peer, (x) => x.rps)).toFixed(2)}x | ${of(side, (x) => x.frontUs).toFixed(1)} | ${of(side, (x) => x.redisUs).toFixed(1)} | ${of(side, (x) => x.scripts).toFixed(3)} | ${of(side, (x) => x.commands).toFixed(2)} |\n`,
    )
} finally {
  for (const s of started.reverse()) await s.stop()
  await redis.stop()
  fs.rmSync(dir, { recursive: true, force: true })
}
