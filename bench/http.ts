// HTTP benchmark: Cairn beside the bare uWebSockets.js ceiling and Redis behind webdis, in one
// run, with the same load generator: wrk pinned to one core, every server pinned to the other.
//   npm run bench:http               full run: 10 s per case after a warm-up, two rounds, medians;
//                                    writes bench/RESULTS.md (HTTP section) and bench/results/*.json
//   npm run bench:http -- --quick    smoke run (seconds): checks only that every case got 2xx
//   --rounds N --seconds S           override the run's shape; --no-build uses dist/ as it is
//   --only ceiling,cairn,webdis,redis,cluster  run only those groups: prints the table, and
//                                    writes neither RESULTS.md nor bench/results/
//   --cases "GET,LIST 100"           with --only: of Cairn's embedded cases, only those named
//                                    (bench/http/cases.ts: names, and `;` as a separator); in
//                                    the group `redis`, of GET, PUT existing (Cairn) and GET,
//                                    SET (webdis): --cases "PUT existing,SET" for writes
//   --node-args "--cpu-prof ..."     flags for Cairn's node (to profile a case)
//   --keys N (default 20,000; quick 5,000) --value-bytes B (96) --hot N (distinct keys the GET
//   and PUT cycles visit; default every key)  --webdis-threads N (1)   the data set's shape,
//                                    the same on every side
//   --no-cluster / --cluster         without (full run) / with (quick run) Cairn and webdis on a
//                                    3+3 Redis Cluster (replicas, WAIT on Cairn's write path):
//                                    the group `cluster` of --only
import { execFileSync, spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { formatResults } from './format.js'
import { startRedisCluster } from '../test/helpers/redis-cluster.js'
import { keyOf, redisKey, writeScripts } from './http/scripts.js'
import { benchPlans, cairnAccount, seedCairnKeys, seedRedisKeys } from './http/setup.js'
import {
  HISTORY_OFF,
  HISTORY_ON,
  ONE_WRITER,
  ONE_WRITER_WATCHED,
  WATCHED,
  WATCHERS,
  pickCases,
} from './http/cases.js'
import {
  type Server,
  cpuSeconds,
  has,
  root,
  startCairn,
  startCeiling,
  startRedis,
  startWebdis,
} from './http/servers.js'
import { type WrkResult, runWrk } from './http/wrk.js'

const argv = process.argv.slice(2)
const quick = argv.includes('--quick')
const opt = (name: string, def: number) => {
  const i = argv.indexOf(name)
  return i >= 0 ? Number(argv[i + 1]) : def
}
const ROUNDS = opt('--rounds', quick ? 1 : 2)
const SECONDS = opt('--seconds', quick ? 2 : 10)
const WARMUP = quick ? 1 : 3
const CONNECTIONS = 50
// The data set: the independent run's 20,000 keys (100 per prefix, for LIST), every key
// visited by the GET and PUT cycles; the same keys and values on Cairn and on webdis.
const KEYS = opt('--keys', quick ? 5000 : 20_000)
const GROUPS = Math.max(1, Math.round(KEYS / 100))
const HOT = argv.includes('--hot') ? opt('--hot', GROUPS * 100) : undefined
const VALUE_BYTES = opt('--value-bytes', 96)
const WEBDIS_THREADS = opt('--webdis-threads', 1)
// The 3+3 cluster: in a full run unless --no-cluster; in a quick run only with --cluster.
const CLUSTER = quick ? argv.includes('--cluster') : !argv.includes('--no-cluster')
const ONLY = argv.includes('--only') ? new Set(argv[argv.indexOf('--only') + 1]!.split(',')) : null
const runs = (group: string) => ONLY === null || ONLY.has(group)
const CASES =
  ONLY !== null && argv.includes('--cases') ? pickCases(argv[argv.indexOf('--cases') + 1]!) : null
const wants = (name: string) => CASES === null || CASES.has(name)
const NODE_ARGS = argv.includes('--node-args')
  ? argv[argv.indexOf('--node-args') + 1]!.split(' ').filter(Boolean)
  : []
const SERVER_CORE = 0
const LOAD_CORE = 1
const VALUE =
  'v'.repeat(Math.min(8, VALUE_BYTES)) +
  Array.from(
    { length: Math.max(0, VALUE_BYTES - 8) },
    (_, i) => 'abcdefghijklmnopqrstuvwxyz0123456789'[(i * 7) % 36],
  ).join('')
const DATASET = { groups: GROUPS, value: VALUE, hot: HOT }

interface CaseResult extends WrkResult {
  server: string
  name: string
  /** Share of one core the server used during the measured seconds. */
  cpu: number
  extra?: Record<string, number>
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2
}

async function measure(
  server: Server,
  name: string,
  url: string,
  script: string | undefined,
  during?: () => () => Promise<Record<string, number>>,
  connections = CONNECTIONS,
  roundsWanted = ROUNDS,
): Promise<CaseResult> {
  const rounds: CaseResult[] = []
  for (let r = 0; r < roundsWanted; r++) {
    await runWrk({ url, script, seconds: WARMUP, connections, core: LOAD_CORE })
    const stopDuring = during?.()
    const cpu0 = server.pids.reduce((n, p) => n + cpuSeconds(p), 0)
    const res = await runWrk({
      url,
      script,
      seconds: SECONDS,
      connections,
      core: LOAD_CORE,
    })
    const cpu1 = server.pids.reduce((n, p) => n + cpuSeconds(p), 0)
    const extra = stopDuring ? await stopDuring() : undefined
    rounds.push({
      ...res,
      server: server.name,
      name,
      cpu: (cpu1 - cpu0) / (res.seconds || SECONDS),
      extra,
    })
    process.stdout.write(
      `  ${server.name} ${name} round ${r + 1}: ${Math.round(res.rps)} req/s, p99 ${res.p99.toFixed(3)} ms${res.non2xx || res.errors ? `, ${res.non2xx} non-2xx, ${res.errors} socket errors` : ''}\n`,
    )
  }
  return combine(rounds)
}

/** Rounds of one case as one result: medians, and the sums of requests and failures. */
function combine(rounds: CaseResult[]): CaseResult {
  const pick = (f: (c: CaseResult) => number) => median(rounds.map(f))
  return {
    ...rounds[0]!,
    requests: rounds.reduce((n, c) => n + c.requests, 0),
    non2xx: rounds.reduce((n, c) => n + c.non2xx, 0),
    errors: rounds.reduce((n, c) => n + c.errors, 0),
    rps: pick((c) => c.rps),
    p50: pick((c) => c.p50),
    p99: pick((c) => c.p99),
    cpu: pick((c) => c.cpu),
    extra:
      rounds[0]!.extra === undefined
        ? undefined
        : Object.fromEntries(
            Object.keys(rounds[0]!.extra).map((k) => [k, pick((c) => c.extra?.[k] ?? Number.NaN)]),
          ),
  }
}

/**
 * The server's event-loop delay over the measured seconds, read from its /metrics
 * (`cairn_event_loop_delay_seconds`, whose window starts again at each scrape): a scrape as
 * wrk starts, and one as it ends.
 */
function loopDelay(server: Server): () => () => Promise<Record<string, number>> {
  const scrape = async () => {
    const text = await (await fetch(`${server.url}/metrics`)).text()
    const q = (x: string) =>
      1000 *
      Number(
        new RegExp(`^cairn_event_loop_delay_seconds\\{quantile="${x}"\\} (\\S+)$`, 'm').exec(
          text,
        )?.[1] ?? Number.NaN,
      )
    return { loopP99: q('0.99'), loopP999: q('0.999'), loopMax: q('1') }
  }
  return () => {
    const started = scrape()
    return async () => {
      await started
      return scrape()
    }
  }
}

/**
 * Checks that a side holds the data set before its GETs are measured: a few of its keys read
 * back with the value seeded (webdis answers 200 with null for a key it lacks, which would
 * count as a fast success), and the answer's size, so the table shows both sides send
 * comparable bodies.
 */
async function cairnHolds(url: string, apiKey: string): Promise<number> {
  let bytes = 0
  for (const k of sampleKeys()) {
    const res = await fetch(`${url}/v1/bench/${k}`, { headers: { 'x-api-key': apiKey } })
    const text = await res.text()
    if (res.status !== 200 || JSON.parse(text).value !== VALUE)
      throw new Error(`Cairn does not hold ${k}: ${res.status} ${text.slice(0, 200)}`)
    bytes = Buffer.byteLength(text)
  }
  return bytes
}

async function webdisHolds(url: string, prefix = ''): Promise<number> {
  let bytes = 0
  for (const k of sampleKeys()) {
    const res = await fetch(`${url}/GET/${encodeURIComponent(redisKey(k, prefix))}`)
    const text = await res.text()
    if (res.status !== 200 || text !== JSON.stringify({ GET: VALUE }))
      throw new Error(`webdis does not hold ${k}: ${res.status} ${text.slice(0, 200)}`)
    bytes = Buffer.byteLength(text)
  }
  // Its SET must be taken too: a key on another master answers 200 with a MOVED error.
  const k = encodeURIComponent(redisKey(keyOf(0, 0), prefix))
  const set = await (await fetch(`${url}/SET/${k}/${encodeURIComponent(VALUE)}`)).text()
  if (set !== '{"SET":[true,"OK"]}') throw new Error(`webdis SET: ${set.slice(0, 200)}`)
  return bytes
}

const sampleKeys = () => [keyOf(0, 0), keyOf(GROUPS >> 1, 50), keyOf(GROUPS - 1, 99)]

/** A measured GET with the size of the side's answer body beside it. */
async function measureGet(
  server: Server,
  script: string,
  holds: () => Promise<number>,
): Promise<CaseResult> {
  const answerBytes = await holds()
  const c = await measure(server, 'GET', server.url, script)
  c.extra = { ...c.extra, answerBytes }
  return c
}

/**
 * Cases compared with each other, measured a round of each in turn, first one then the other
 * going first: a machine whose load drifts during the run, or a store that slows as writes
 * pile up, then moves them alike, and their ratio holds.
 */
async function paired(
  server: Server,
  cases: [string, string, (() => () => Promise<Record<string, number>>)?][],
): Promise<CaseResult[]> {
  const rounds = cases.map((): CaseResult[] => [])
  for (let r = 0; r < ROUNDS; r++) {
    const order = cases.map((_, i) => i)
    if (r % 2 === 1) order.reverse()
    for (const i of order) {
      const [name, script, during] = cases[i]!
      process.stdout.write(`  (round ${r + 1} of ${ROUNDS})\n`)
      rounds[i]!.push(await measure(server, name, server.url, script, during, CONNECTIONS, 1))
    }
  }
  return rounds.map(combine)
}

const allKeys = () =>
  Array.from({ length: GROUPS * 100 }, (_, n) => keyOf(Math.floor(n / 100), n % 100))
const seedCairn = (url: string, apiKey: string) => seedCairnKeys(url, apiKey, allKeys(), VALUE)
const seedRedis = (port: number, prefix = '') => seedRedisKeys(port, allKeys(), VALUE, prefix)

async function cairnCases(dir: string): Promise<CaseResult[]> {
  const dataDir = path.join(dir, 'cairn-data')
  const plans = benchPlans(dir)
  let server = await startCairn(SERVER_CORE, dataDir, plans, [], NODE_ARGS)
  try {
    const apiKey = await cairnAccount(server.url, dataDir)
    process.stdout.write(`  seeding ${GROUPS * 100} keys of ${VALUE.length + 2}-byte values\n`)
    await seedCairn(server.url, apiKey)
    const s = writeScripts(path.join(dir, 'lua'), apiKey, DATASET)
    const out: CaseResult[] = []
    // The Upstash path (@upstash/redis's wire) beside /v1's GET and PUT existing, on the same
    // keys, a round of each in turn.
    if (wants('GET') && wants('UPSTASH GET')) {
      const answerBytes = await cairnHolds(server.url, apiKey)
      const [get, upstashGet] = await paired(server, [
        ['GET', s.get!],
        ['UPSTASH GET', s.upstashGet!],
      ])
      get!.extra = { ...get!.extra, answerBytes }
      out.push(get!, upstashGet!)
    } else if (wants('GET'))
      out.push(await measureGet(server, s.get!, () => cairnHolds(server.url, apiKey)))
    // The PUT cases with the server's event-loop delay over their measured seconds.
    const delay = loopDelay(server)
    if (wants('PUT new')) out.push(await measure(server, 'PUT new', server.url, s.putNew, delay))
    if (wants('PUT existing') && wants('UPSTASH SET'))
      out.push(
        ...(await paired(server, [
          ['PUT existing', s.putExisting!, delay],
          ['UPSTASH SET', s.upstashSet!, delay],
        ])),
      )
    else if (wants('PUT existing'))
      out.push(await measure(server, 'PUT existing', server.url, s.putExisting, delay))
    // What history costs a PUT: the same keys on an account whose plan keeps none, a round
    // of each in turn.
    if (wants(HISTORY_ON) || wants(HISTORY_OFF)) {
      const offKey = await cairnAccount(server.url, dataDir, [], 'bench-no-history')
      await seedCairn(server.url, offKey)
      const off = writeScripts(path.join(dir, 'lua-no-history'), offKey, DATASET)
      out.push(
        ...(await paired(server, [
          [HISTORY_ON, s.putExisting!, delay],
          [HISTORY_OFF, off.putExisting!, delay],
        ])),
      )
    }
    if (wants('TX 10 PUTs')) {
      const tx = await measure(server, 'TX 10 PUTs', server.url, s.tx10)
      tx.extra = { keysPerSecond: tx.rps * 10 }
      out.push(tx)
    }
    if (wants('INCR hot key'))
      out.push(await measure(server, 'INCR hot key', server.url, s.incrHot))
    // The watch's cost to writes: one writer (a PUT at a time, each answered after fsync)
    // with and without 100 watchers of its namespace, then 50 writers for the fan-out's reach.
    if (wants(ONE_WRITER))
      out.push(await measure(server, ONE_WRITER, server.url, s.putExisting, undefined, 1))
    if (wants(ONE_WRITER_WATCHED)) out.push(await watchedPuts(server, apiKey, s.putExisting, 1))
    if (wants(WATCHED)) out.push(await watchedPuts(server, apiKey, s.putExisting, CONNECTIONS))
    if (wants('LIST 100')) out.push(await measure(server, 'LIST 100', server.url, s.list))
    if (wants('GET 90 / PUT 10'))
      out.push(await measure(server, 'GET 90 / PUT 10', server.url, s.mixed))
    // Compaction on a loop for the whole case: the log is rewritten again and again.
    const token = fs.readFileSync(path.join(dataDir, 'operator.token'), 'utf8').trim()
    const compactions = async () => {
      const text = await (await fetch(`${server.url}/metrics`)).text()
      return Number(/^cairn_engine_compactions_total (\d+)/m.exec(text)?.[1] ?? 0)
    }
    if (wants('GET during compaction'))
      out.push(
        await measure(server, 'GET during compaction', server.url, s.get, () => {
          let running = true
          const loop = (async () => {
            const before = await compactions()
            while (running) {
              const res = await fetch(`${server.url}/_operator/compact`, {
                method: 'POST',
                headers: { 'x-operator-token': token, 'content-type': 'application/json' },
                body: '{}',
              })
              if (!res.ok) throw new Error(`compact: ${res.status}`)
            }
            return { compactions: (await compactions()) - before }
          })()
          return async () => {
            running = false
            return loop
          }
        }),
      )
    // A restart opens from the checkpoint written at close: the keys are then read from the
    // namespace's base (engine/base-keys.ts), as bytes, not strings in a Map.
    if (wants('GET after restart') || wants('LIST 100 after restart')) {
      await server.stop()
      server = await startCairn(SERVER_CORE, dataDir, plans, [], NODE_ARGS)
      if (wants('GET after restart'))
        out.push(await measure(server, 'GET after restart', server.url, s.get))
      if (wants('LIST 100 after restart'))
        out.push(await measure(server, 'LIST 100 after restart', server.url, s.list))
    }
    return out
  } finally {
    await server.stop()
  }
}

/**
 * PUT existing keys with 100 watchers on the namespace: the watchers run in a process of their
 * own beside wrk; a probe write every 20 ms carries its send time, so the watchers measure how
 * long a change takes from write to delivery.
 */
async function watchedPuts(
  server: Server,
  apiKey: string,
  script: string,
  connections: number,
): Promise<CaseResult> {
  const child = spawn(
    'taskset',
    [
      '-c',
      String(LOAD_CORE),
      process.execPath,
      '--import',
      'tsx',
      path.join(root, 'bench/http/watchers.ts'),
      server.url,
      apiKey,
      'bench',
      String(WATCHERS),
    ],
    { cwd: root, stdio: ['pipe', 'pipe', 'inherit'] },
  )
  const lines: string[] = []
  let partial = ''
  child.stdout!.setEncoding('utf8')
  child.stdout!.on('data', (d: string) => {
    partial += d
    const parts = partial.split('\n')
    partial = parts.pop()!
    lines.push(...parts)
  })
  const next = async () => {
    const at = lines.length
    for (let i = 0; i < 3000 && lines.length === at; i++)
      await new Promise((r) => setTimeout(r, 10))
    if (lines.length === at) throw new Error('the watchers did not answer')
    return lines[at]!
  }
  try {
    if ((await next()) !== 'ready') throw new Error('the watchers did not start')
    const name = connections === 1 ? ONE_WRITER_WATCHED : WATCHED
    return await measure(
      server,
      name,
      server.url,
      script,
      () => {
        child.stdin!.write('stats\n')
        const first = next().then((l) => JSON.parse(l))
        const started = performance.now()
        let probing = true
        const probes = (async () => {
          while (probing) {
            await fetch(`${server.url}/v1/bench/probe`, {
              method: 'PUT',
              headers: { 'x-api-key': apiKey, 'content-type': 'application/json' },
              body: `{"value":${Date.now()}}`,
            })
            await new Promise((r) => setTimeout(r, 20))
          }
        })()
        return async () => {
          probing = false
          await probes
          child.stdin!.write('stats\n')
          const [a, b] = [await first, JSON.parse(await next())]
          const seconds = (performance.now() - started) / 1000
          return { eventsPerSecond: (b.events - a.events) / seconds, lagP50: b.p50, lagP99: b.p99 }
        }
      },
      connections,
    )
  } finally {
    child.stdin!.end()
    child.kill()
  }
}

async function webdisCases(dir: string): Promise<CaseResult[]> {
  const wdir = path.join(dir, 'webdis')
  fs.mkdirSync(wdir)
  const redis = await startRedis(SERVER_CORE, wdir, 'plain')
  const server = await startWebdis(SERVER_CORE, wdir, redis, 'webdis', WEBDIS_THREADS)
  try {
    seedRedis(redis.port)
    const s = writeScripts(path.join(dir, 'lua-webdis'), 'unused', DATASET)
    return [
      await measureGet(server, s.redisGet!, () => webdisHolds(server.url)),
      await measure(server, 'SET', server.url, s.redisSet),
    ]
  } finally {
    await server.stop()
    await redis.stop()
  }
}

/**
 * Cairn on Redis beside webdis on the same Redis: a one-node Redis Cluster with its AOF
 * fsynced on every write, Cairn with --store (durability always) and then webdis in front
 * of it, each pinned with Redis to the server core. Both are an HTTP front end over one
 * Redis; Cairn also authenticates, rate-limits (its bucket on Redis, taken in leases), counts usage and
 * keeps its ordered index and counts in the same script as each write.
 */
async function sameRedisCases(dir: string): Promise<CaseResult[]> {
  const rdir = path.join(dir, 'same-redis')
  fs.mkdirSync(rdir)
  const redis = await startRedis(SERVER_CORE, rdir, 'cluster')
  const url = `redis://127.0.0.1:${redis.port}`
  const out: CaseResult[] = []
  try {
    const server = await startCairn(
      SERVER_CORE,
      path.join(rdir, 'front'),
      benchPlans(dir),
      ['--store', url],
      NODE_ARGS,
    )
    // Redis shares the server's core: its CPU counts with Cairn's, as it does with webdis's.
    server.pids.push(redis.pid)
    try {
      const apiKey = await cairnAccount(server.url, rdir, [
        '--store',
        url,
        '--plans',
        path.join(dir, 'plans.json'),
      ])
      process.stdout.write(`  seeding ${GROUPS * 100} keys on Redis through Cairn\n`)
      await seedCairn(server.url, apiKey)
      const s = writeScripts(path.join(dir, 'lua-redis'), apiKey, DATASET)
      if (wants('GET'))
        out.push(await measureGet(server, s.get!, () => cairnHolds(server.url, apiKey)))
      if (wants('PUT existing'))
        out.push(
          await measure(server, 'PUT existing', server.url, s.putExisting, loopDelay(server)),
        )
    } finally {
      await server.stop()
    }
    seedRedis(redis.port)
    const webdis = await startWebdis(SERVER_CORE, rdir, redis, 'webdis-redis', WEBDIS_THREADS)
    try {
      const s = writeScripts(path.join(dir, 'lua-webdis-redis'), 'unused', DATASET)
      if (wants('GET'))
        out.push(await measureGet(webdis, s.redisGet!, () => webdisHolds(webdis.url)))
      if (wants('SET')) out.push(await measure(webdis, 'SET', webdis.url, s.redisSet))
    } finally {
      await webdis.stop()
    }
  } finally {
    await redis.stop()
  }
  return out
}

/**
 * Cairn on the durable topology: a 3+3 Redis Cluster (test/helpers/redis-cluster.ts, the one
 * the failover tests run on: every node `appendfsync always`, a replica per master), so each
 * durable write also waits for a replica (`WAIT`, in groups: server/store/cluster/
 * durable-writes.ts). Beside it webdis on one of that cluster's masters, its keys given a
 * hash tag that master serves: a SET there is fsynced on the master and not waited for.
 * Every node is pinned to the server core, as the one-node Redis is.
 */
async function clusterCases(dir: string): Promise<CaseResult[]> {
  const cdir = path.join(dir, 'cluster')
  fs.mkdirSync(cdir)
  const cluster = await startRedisCluster()
  if (typeof cluster === 'string') {
    process.stdout.write(`  3+3 cluster cases skipped: ${cluster}\n`)
    return []
  }
  const out: CaseResult[] = []
  try {
    const pids = cluster.nodes.map((n) => n.proc.pid!)
    for (const pid of pids)
      execFileSync('taskset', ['-a', '-p', '-c', String(SERVER_CORE), String(pid)], {
        stdio: 'ignore',
      })
    const server = await startCairn(
      SERVER_CORE,
      path.join(cdir, 'front'),
      benchPlans(dir),
      ['--store', cluster.url],
      NODE_ARGS,
    )
    server.name = 'cairn-3x3'
    server.pids.push(...pids)
    try {
      const apiKey = await cairnAccount(server.url, cdir, [
        '--store',
        cluster.url,
        '--plans',
        path.join(dir, 'plans.json'),
      ])
      process.stdout.write(`  seeding ${GROUPS * 100} keys on the 3+3 cluster through Cairn\n`)
      await seedCairn(server.url, apiKey)
      const s = writeScripts(path.join(dir, 'lua-3x3'), apiKey, DATASET)
      out.push(await measureGet(server, s.get!, () => cairnHolds(server.url, apiKey)))
      out.push(await measure(server, 'PUT existing', server.url, s.putExisting, loopDelay(server)))
    } finally {
      await server.stop()
    }
    const master = (await cluster.masters())[0]!
    const prefix = hashTagOn(master.port)
    seedRedis(master.port, prefix)
    const webdis = await startWebdis(
      SERVER_CORE,
      cdir,
      { port: master.port, pid: master.proc.pid!, stop: async () => {} },
      'webdis-3x3',
      WEBDIS_THREADS,
    )
    webdis.pids = [webdis.pids[0]!, ...pids]
    try {
      const s = writeScripts(path.join(dir, 'lua-webdis-3x3'), 'unused', {
        ...DATASET,
        redisPrefix: prefix,
      })
      out.push(await measureGet(webdis, s.redisGet!, () => webdisHolds(webdis.url, prefix)))
      out.push(await measure(webdis, 'SET', webdis.url, s.redisSet))
    } finally {
      await webdis.stop()
    }
  } finally {
    await cluster.stop()
  }
  return out
}

/** A hash tag whose slot the node on `port` serves (a key elsewhere is answered MOVED). */
function hashTagOn(port: number): string {
  for (let i = 0; i < 10_000; i++) {
    const tag = `{b${i}}`
    const said = execFileSync('redis-cli', ['-p', String(port), 'SET', `${tag}probe`, '1'])
      .toString()
      .trim()
    if (said === 'OK') {
      execFileSync('redis-cli', ['-p', String(port), 'DEL', `${tag}probe`])
      return tag
    }
  }
  throw new Error(`no hash tag found on the master at ${port}`)
}

function fmt(n: number, digits = 0): string {
  return Number.isFinite(n)
    ? n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })
    : '-'
}

function report(all: CaseResult[]): string {
  const find = (server: string, name: string) =>
    all.find((c) => c.server === server && c.name === name)
  const ceiling = find('ceiling', 'GET')
  // Each Cairn case beside its peer: webdis without persistence, and webdis on a Redis that
  // fsyncs every write (AOF, `appendfsync always`): for Cairn on its engine and on the one-node
  // Redis, that Redis (`webdis-redis`); for Cairn on the 3+3 cluster, one of its masters.
  const peerCase = (name: string): string | undefined =>
    name === 'GET' || name === 'UPSTASH GET'
      ? 'GET'
      : ['PUT new', 'PUT existing', 'UPSTASH SET'].includes(name)
        ? 'SET'
        : undefined
  const plainPeer = (c: CaseResult) => {
    const n = peerCase(c.name)
    return c.server === 'cairn' && n ? find('webdis', n) : undefined
  }
  const fsyncPeer = (c: CaseResult) => {
    const n = peerCase(c.name)
    if (n === undefined) return undefined
    if (c.server === 'cairn' || c.server === 'cairn-redis') return find('webdis-redis', n)
    if (c.server === 'cairn-3x3') return find('webdis-3x3', n)
    return undefined
  }
  const ratio = (a: CaseResult | undefined, b: CaseResult | undefined) =>
    a && b ? `${fmt(a.rps / b.rps, 2)}x` : ''
  const rows = [
    '| server | case | req/s | p50 ms | p99 ms | server CPU | Cairn / ceiling | Cairn / webdis | Cairn / webdis, AOF always |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|',
  ]
  for (const c of all) {
    const vsCeiling = c.server === 'cairn' ? ratio(c, ceiling) : ''
    const x = c.extra ?? {}
    const notes = [
      x.answerBytes !== undefined ? `${fmt(x.answerBytes)}-byte answers` : '',
      x.compactions !== undefined ? `${x.compactions} compactions` : '',
      x.keysPerSecond !== undefined ? `${fmt(x.keysPerSecond)} keys/s` : '',
      x.eventsPerSecond !== undefined
        ? `${fmt(x.eventsPerSecond)} events/s delivered, write to delivery p50 ${fmt(x.lagP50)} ms, p99 ${fmt(x.lagP99)} ms`
        : '',
      x.loopP999 !== undefined
        ? `event loop delay p99 ${fmt(x.loopP99!, 1)}, p99.9 ${fmt(x.loopP999, 1)}, max ${fmt(x.loopMax!, 1)} ms`
        : '',
    ].filter(Boolean)
    rows.push(
      `| ${c.server} | ${c.name}${notes.length ? ` (${notes.join('; ')})` : ''} | ${fmt(c.rps)} | ${fmt(c.p50, 3)} | ${fmt(c.p99, 3)} | ${fmt(c.cpu * 100)}% | ${vsCeiling} | ${ratio(c, plainPeer(c))} | ${ratio(c, fsyncPeer(c))} |`,
    )
  }
  const verdict = (ok: boolean | undefined) =>
    ok === undefined ? 'not measured' : ok ? 'met' : 'MISSED'
  const get = find('cairn', 'GET')
  const webdisGet = find('webdis', 'GET')
  const fsyncSet = find('webdis-redis', 'SET')
  const putNew = find('cairn', 'PUT new')
  const putExisting = find('cairn', 'PUT existing')
  const oneWriter = find('cairn', ONE_WRITER)
  const watched = find('cairn', ONE_WRITER_WATCHED)
  // The issue's targets (medians of a full run, the peer in the same run).
  const target: string[][] = []
  for (const [name, put] of [
    ['PUT new', putNew],
    ['PUT existing', putExisting],
  ] as const) {
    target.push([
      `durable ${name} >= 1.0x webdis SET on Redis \`appendfsync always\`; p99 <= that peer's p99`,
      put && fsyncSet
        ? `${fmt(put.rps / fsyncSet.rps, 2)}x (${fmt(put.rps)} vs ${fmt(fsyncSet.rps)}/s); p99 ${fmt(put.p99, 2)} vs ${fmt(fsyncSet.p99, 2)} ms`
        : '',
      verdict(put && fsyncSet ? put.rps >= fsyncSet.rps && put.p99 <= fsyncSet.p99 : undefined),
    ])
  }
  target.push([
    'GET >= 2.0x webdis GET',
    get && webdisGet ? `${fmt(get.rps / webdisGet.rps, 2)}x` : '',
    verdict(get && webdisGet ? get.rps >= 2 * webdisGet.rps : undefined),
  ])
  target.push([
    'GET >= 0.65x the bare uWebSockets.js ceiling',
    get && ceiling ? `${fmt(get.rps / ceiling.rps, 2)}x` : '',
    verdict(get && ceiling ? get.rps >= 0.65 * ceiling.rps : undefined),
  ])
  target.push([
    'GET p99 <= 2 ms',
    get ? `${fmt(get.p99, 3)} ms` : '',
    verdict(get ? get.p99 <= 2 : undefined),
  ])
  const delays = [putNew, putExisting].filter((c) => c?.extra?.loopP999 !== undefined)
  const worst = delays.length ? Math.max(...delays.map((c) => c!.extra!.loopP999!)) : undefined
  target.push([
    'event-loop delay p99.9 <= 5 ms during the PUT cases (in the server, over the measured seconds)',
    worst !== undefined
      ? delays
          .map(
            (c) =>
              `${c!.name}: p99.9 ${fmt(c!.extra!.loopP999!, 1)} ms (p99 ${fmt(c!.extra!.loopP99!, 1)}, max ${fmt(c!.extra!.loopMax!, 1)})`,
          )
          .join('; ')
      : '',
    verdict(worst !== undefined ? worst <= 5 : undefined),
  ])
  target.push([
    `one writer with ${WATCHERS} watchers >= 0.9x its PUTs alone`,
    watched && oneWriter
      ? `${fmt(watched.rps / oneWriter.rps, 2)}x (${fmt(watched.rps)} vs ${fmt(oneWriter.rps)}/s)`
      : '',
    verdict(watched && oneWriter ? watched.rps >= 0.9 * oneWriter.rps : undefined),
  ])
  target.push([
    'engine: puts without fsync, index memory, space amplification, compaction writes',
    '`npm run bench:engine` (its section of this file)',
    '',
  ])
  const targets = [
    '| target | measured | |',
    '|---|---|---|',
    ...target.map((r) => `| ${r.join(' | ')} |`),
  ]
  return `${rows.join('\n')}\n\nTargets (issue 34):\n\n${targets.join('\n')}\n\nOther goals:\n${otherGoals(find).join('\n')}\n`
}

function otherGoals(find: (server: string, name: string) => CaseResult | undefined): string[] {
  const verdict = (ok: boolean | undefined) =>
    ok === undefined ? 'not measured' : ok ? 'met' : 'MISSED'
  const get = find('cairn', 'GET')
  const list = find('cairn', 'LIST 100')
  const comp = find('cairn', 'GET during compaction')
  const getAfter = find('cairn', 'GET after restart')
  const listAfter = find('cairn', 'LIST 100 after restart')
  const set = find('webdis', 'SET')
  const webdisGet = find('webdis', 'GET')
  const rget = find('cairn-redis', 'GET')
  const rput = find('cairn-redis', 'PUT existing')
  const sameGet = find('webdis-redis', 'GET')
  const sameSet = find('webdis-redis', 'SET')
  const cget = find('cairn-3x3', 'GET')
  const cput = find('cairn-3x3', 'PUT existing')
  const masterGet = find('webdis-3x3', 'GET')
  const masterSet = find('webdis-3x3', 'SET')
  const putExisting = find('cairn', 'PUT existing')
  const tx = find('cairn', 'TX 10 PUTs')
  const fanOut = find('cairn', WATCHED)
  const upGet = find('cairn', 'UPSTASH GET')
  const upSet = find('cairn', 'UPSTASH SET')
  const historyOn = find('cairn', HISTORY_ON)
  const historyOff = find('cairn', HISTORY_OFF)
  const putTail = (c: CaseResult) =>
    `${fmt(c.rps)}/s, p99 ${fmt(c.p99, 2)} ms, loop delay p99.9 ${fmt(c.extra?.loopP999 ?? Number.NaN, 1)} ms`
  return [
    `- LIST of 100 keys at least 0.6x GET: ${list && get ? `${fmt(list.rps)} req/s, ${fmt(list.rps / get.rps, 3)}x: ${verdict(list.rps >= 0.6 * get.rps)}` : 'not measured'}`,
    `- Cairn on Redis: GET at least webdis on the same Redis, PUT at least 0.8x (issue 30): ${rget && rput && sameGet && sameSet ? `GET ${fmt(rget.rps / sameGet.rps, 2)}x, PUT ${fmt(rput.rps / sameSet.rps, 2)}x: ${verdict(rget.rps >= sameGet.rps && rput.rps >= 0.8 * sameSet.rps)}` : 'not measured'}`,
    `- what the durable topology costs (3+3 cluster, WAIT on the write path, beside the one-node Redis): ${cget && cput ? `GET ${fmt(cget.rps)}/s, PUT ${fmt(cput.rps)}/s (p99 ${fmt(cput.p99, 2)} ms)${rget && rput ? `: ${fmt(cget.rps / rget.rps, 2)}x and ${fmt(cput.rps / rput.rps, 2)}x of one node` : ''}${masterGet && masterSet ? `; ${fmt(cget.rps / masterGet.rps, 2)}x and ${fmt(cput.rps / masterSet.rps, 2)}x of webdis on one of its masters, PUT at least 0.8x: ${verdict(cput.rps >= 0.8 * masterSet.rps)}` : ''}` : 'not measured (--cluster)'}`,
    `- a transaction of 10 puts beside 10 single PUTs: ${tx && putExisting ? `${fmt(tx.rps * 10)} keys/s vs ${fmt(putExisting.rps)} PUTs/s: ${fmt((tx.rps * 10) / putExisting.rps, 2)}x` : 'not measured'}`,
    `- watch fan-out under 50 writers: ${fanOut && putExisting ? `${fmt(fanOut.extra?.eventsPerSecond ?? 0)} events/s delivered to ${WATCHERS} watchers, PUTs at ${fmt(fanOut.rps / putExisting.rps, 2)}x of PUT existing (the server's core spent on delivery), write to delivery p99 ${fmt(fanOut.extra?.lagP99 ?? 0)} ms` : 'not measured'}`,
    `- after a restart (keys read from the checkpoint's base): ${getAfter && listAfter && get && list ? `GET ${fmt(getAfter.rps / get.rps, 2)}x of GET, LIST 100 ${fmt(listAfter.rps / list.rps, 2)}x of LIST 100, ${fmt(listAfter.rps / getAfter.rps, 2)}x of GET after restart` : 'not measured'}`,
    `- the Upstash path (@upstash/redis's wire: one-element /pipeline, base64) within 0.9x of /v1: ${upGet && upSet && get && putExisting ? `GET ${fmt(upGet.rps / get.rps, 2)}x of GET, SET ${fmt(upSet.rps / putExisting.rps, 2)}x of PUT existing${webdisGet && set ? `; ${fmt(upGet.rps / webdisGet.rps, 2)}x and ${fmt(upSet.rps / set.rps, 2)}x of webdis GET and SET` : ''}: ${verdict(upGet.rps >= 0.9 * get.rps && upSet.rps >= 0.9 * putExisting.rps)}` : 'not measured'}`,
    `- what history costs PUT existing (the same keys, a plan without history, a round of each in turn): ${historyOn && historyOff ? `on ${putTail(historyOn)}; off ${putTail(historyOff)}; on/off ${fmt(historyOn.rps / historyOff.rps, 2)}x` : 'not measured'}`,
    `- GET during compaction at least 0.8x GET, p99 at most twice GET's: ${comp && get ? `${fmt(comp.rps / get.rps, 2)}x, p99 ${fmt(comp.p99, 3)} vs ${fmt(get.p99, 3)} ms: ${verdict(comp.rps >= 0.8 * get.rps && comp.p99 <= 2 * get.p99)}` : 'not measured'}`,
  ]
}

function machine(): string {
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU'
  return `${os.cpus().length} cores (${cpu}), Node ${process.version}, ${os.platform()} ${os.release()}`
}

async function main(): Promise<number> {
  for (const tool of ['wrk', 'taskset']) {
    if (!has(tool)) {
      const msg = `${tool} is not installed: apt-get install -y ${tool === 'wrk' ? 'wrk' : 'util-linux'} (Debian)`
      process.stderr.write(`bench:http: ${msg}\n`)
      return quick ? 0 : 1
    }
  }
  if (os.cpus().length < 2)
    process.stderr.write('bench:http: fewer than 2 cores; server and load share one\n')
  if (!argv.includes('--no-build')) {
    process.stdout.write('building (tsc)\n')
    execFileSync('npx', ['tsc', '-p', 'tsconfig.json'], { cwd: root, stdio: 'inherit' })
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-bench-http-'))
  const all: CaseResult[] = []
  try {
    process.stdout.write(
      `${quick ? 'quick' : 'full'} run: ${ROUNDS} round(s) of ${SECONDS} s per case, ${CONNECTIONS} connections; server on core ${SERVER_CORE}, wrk on core ${LOAD_CORE}\n`,
    )
    if (runs('ceiling')) {
      const ceiling = await startCeiling(SERVER_CORE)
      try {
        all.push(await measure(ceiling, 'GET', `${ceiling.url}/`, undefined))
      } finally {
        await ceiling.stop()
      }
    }
    if (runs('cairn')) all.push(...(await cairnCases(dir)))
    if (has('webdis') && has('redis-server') && has('redis-cli')) {
      if (runs('webdis')) all.push(...(await webdisCases(dir)))
      if (runs('redis')) all.push(...(await sameRedisCases(dir)))
      if (ONLY === null ? CLUSTER : ONLY.has('cluster')) all.push(...(await clusterCases(dir)))
    } else
      process.stdout.write(
        '  webdis or redis-server not installed (apt-get install -y webdis redis-server): peer cases skipped\n',
      )
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
  const table = report(all)
  process.stdout.write(`\n${table}`)
  const bad = all.filter((c) => c.requests === 0 || c.non2xx > 0 || c.errors > 0)
  if (quick) {
    for (const c of bad)
      process.stderr.write(
        `bench:http: ${c.server} ${c.name}: ${c.requests} requests, ${c.non2xx} non-2xx, ${c.errors} socket errors\n`,
      )
    return bad.length ? 1 : 0
  }
  // A partial run is for looking, not for the record.
  if (ONLY !== null) return 0
  const stamp = new Date().toISOString().replace(/[:.]/g, '-').slice(0, 19)
  fs.mkdirSync(path.join(root, 'bench/results'), { recursive: true })
  fs.writeFileSync(
    path.join(root, `bench/results/http-${stamp}.json`),
    `${JSON.stringify({ machine: machine(), rounds: ROUNDS, seconds: SECONDS, connections: CONNECTIONS, cases: all }, null, 2)}\n`,
  )
  const section = `<!-- http:start -->\n## HTTP\n\n\`npm run bench:http${argv.length ? ` -- ${argv.join(' ')}` : ''}\` on ${new Date().toISOString().slice(0, 16)}Z (load average at the end: ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(
      ', ',
    )}): ${machine()}. wrk (1 thread, ${CONNECTIONS} connections) on core ${LOAD_CORE}, each server on core ${SERVER_CORE}; ${ROUNDS} rounds of ${SECONDS} s per case after a ${WARMUP} s warm-up, medians. The same data on every side: ${GROUPS * 100} keys of ${VALUE.length}-byte values (${VALUE.length + 2} as JSON), seeded before the cases; the GET and PUT cycles visit ${HOT === undefined ? 'every key once per cycle, shuffled' : `${HOT} of them`}, the same keys in the same order on Cairn and on webdis, and each side's GET is checked to find the keys first (its answer's size beside it). Cairn runs with default durability (\`always\`: a PUT is answered after fsync); the event-loop delay is the server's own (\`cairn_event_loop_delay_seconds\` from /metrics over the measured seconds). webdis (${WEBDIS_THREADS} thread${WEBDIS_THREADS === 1 ? '' : 's'}) fronts redis-server with persistence off (\`webdis\`) and the one-node Redis Cluster with its AOF fsynced on every write (\`webdis-redis\`: the durable peer, and the same Redis \`cairn-redis\`, Cairn with \`--store\`, runs on). \`cairn-3x3\` is Cairn on a 3+3 Redis Cluster (every node \`appendfsync always\`, a replica per master, \`WAIT\` on the write path) beside \`webdis-3x3\`, webdis on one of its masters.\n\n${table}<!-- http:end -->`
  const file = path.join(root, 'bench/RESULTS.md')
  const old = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '# Benchmark results\n'
  const next = /<!-- http:start -->[\s\S]*<!-- http:end -->/.test(old)
    ? old.replace(/<!-- http:start -->[\s\S]*<!-- http:end -->/, section)
    : `${old.trimEnd()}\n\n${section}\n`
  fs.writeFileSync(file, next)
  formatResults(file)
  if (bad.length) process.stderr.write(`bench:http: ${bad.length} case(s) had failed requests\n`)
  return 0
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`bench:http: ${(err as Error).stack ?? err}\n`)
    process.exit(1)
  },
)
