// HTTP benchmark: Cairn beside the bare uWebSockets.js ceiling and Redis behind webdis, in one
// run, with the same load generator: wrk pinned to one core, every server pinned to the other.
//   npm run bench:http               full run: 10 s per case after a warm-up, two rounds, medians;
//                                    writes bench/RESULTS.md (HTTP section) and bench/results/*.json
//   npm run bench:http -- --quick    smoke run (seconds): checks only that every case got 2xx
//   --rounds N --seconds S           override the run's shape; --no-build uses dist/ as it is
//   --only ceiling,cairn,webdis,redis  run only those groups of cases: prints the table, and
//                                    writes neither RESULTS.md nor bench/results/
//   --cases "GET,LIST 100"           with --only: of Cairn's embedded cases, only those named
//   --node-args "--cpu-prof ..."     flags for the embedded Cairn's node (to profile a case)
import { execFileSync, spawn } from 'node:child_process'
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { formatResults } from './format.js'
import { keyOf, writeScripts } from './http/scripts.js'
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
const GROUPS = quick ? 50 : 1000 // 100 keys each: 100,000 keys in a full run
const ONLY = argv.includes('--only') ? new Set(argv[argv.indexOf('--only') + 1]!.split(',')) : null
const runs = (group: string) => ONLY === null || ONLY.has(group)
const CASES =
  ONLY !== null && argv.includes('--cases')
    ? new Set(argv[argv.indexOf('--cases') + 1]!.split(','))
    : null
const wants = (name: string) => CASES === null || CASES.has(name)
const NODE_ARGS = argv.includes('--node-args')
  ? argv[argv.indexOf('--node-args') + 1]!.split(' ').filter(Boolean)
  : []
const SERVER_CORE = 0
const LOAD_CORE = 1
const VALUE =
  'v'.repeat(8) +
  Array.from({ length: 88 }, (_, i) => 'abcdefghijklmnopqrstuvwxyz0123456789'[(i * 7) % 36]).join(
    '',
  )

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
  }
}

/**
 * Cases compared with each other, measured a round of each in turn, first one then the other
 * going first: a machine whose load drifts during the run, or a store that slows as writes
 * pile up, then moves them alike, and their ratio holds.
 */
async function paired(server: Server, cases: [string, string][]): Promise<CaseResult[]> {
  const rounds = cases.map((): CaseResult[] => [])
  for (let r = 0; r < ROUNDS; r++) {
    const order = cases.map((_, i) => i)
    if (r % 2 === 1) order.reverse()
    for (const i of order) {
      const [name, script] = cases[i]!
      process.stdout.write(`  (round ${r + 1} of ${ROUNDS})\n`)
      rounds[i]!.push(await measure(server, name, server.url, script, undefined, CONNECTIONS, 1))
    }
  }
  return rounds.map(combine)
}

/** PUTs every key of the data set over a few keep-alive connections. */
async function seedCairn(url: string, apiKey: string): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 32 })
  const u = new URL(url)
  const body = JSON.stringify({ value: VALUE })
  const put = (key: string) =>
    new Promise<void>((resolve, reject) => {
      const req = http.request(
        {
          host: u.hostname,
          port: u.port,
          method: 'PUT',
          path: `/v1/bench/${key}`,
          agent,
          headers: { 'x-api-key': apiKey, 'content-type': 'application/json' },
        },
        (res) => {
          res.resume()
          res.on('end', () =>
            res.statusCode! < 300 ? resolve() : reject(new Error(`seed ${key}: ${res.statusCode}`)),
          )
        },
      )
      req.on('error', reject)
      req.end(body)
    })
  let next = 0
  const total = GROUPS * 100
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      for (let n = next++; n < total; n = next++) await put(keyOf(Math.floor(n / 100), n % 100))
    }),
  )
  agent.destroy()
}

/**
 * A plans file with one plan whose rate limit the bench never reaches: every request still
 * takes a token from its account's bucket, as a real plan's requests do, and the limiter's
 * cost counts in every case.
 */
function benchPlans(dir: string): string {
  const plans = path.join(dir, 'plans.json')
  fs.writeFileSync(
    plans,
    JSON.stringify({
      plans: [
        {
          id: 'bench',
          name: 'Bench',
          requestsPerDay: null,
          ratePerSecond: 10_000_000,
          burst: 10_000_000,
          maxNamespaces: null,
          maxStorageBytes: null,
          maxValueBytes: 1048576,
          maxWatches: null,
        },
      ],
      default: 'bench',
      upgradeUrl: null,
    }),
  )
  return plans
}

/** An account on the plan `bench` and its namespace `bench`; resolves with the API key. */
async function cairnAccount(url: string, dataDir: string, store: string[] = []): Promise<string> {
  const apiKey = cairnCli(dataDir, [
    'account',
    'create',
    '--email',
    'bench@example.com',
    '--plan',
    'bench',
    ...store,
  ]).apiKey.secret
  const created = await fetch(`${url}/v1/namespaces`, {
    method: 'POST',
    headers: { 'x-api-key': apiKey, 'content-type': 'application/json' },
    body: '{"name":"bench"}',
  })
  if (created.status !== 201) throw new Error(`creating the namespace: ${created.status}`)
  return apiKey
}

function cairnCli(dataDir: string, args: string[]): any {
  const out = execFileSync(
    process.execPath,
    [path.join(root, 'dist/server/cli/index.js'), ...args, '--data', dataDir, '--json'],
    { cwd: root },
  )
  return JSON.parse(out.toString().trim().split('\n').pop()!)
}

async function cairnCases(dir: string): Promise<CaseResult[]> {
  const dataDir = path.join(dir, 'cairn-data')
  const plans = benchPlans(dir)
  let server = await startCairn(SERVER_CORE, dataDir, plans, [], NODE_ARGS)
  try {
    const apiKey = await cairnAccount(server.url, dataDir)
    process.stdout.write(`  seeding ${GROUPS * 100} keys of ${VALUE.length + 2}-byte values\n`)
    await seedCairn(server.url, apiKey)
    const s = writeScripts(path.join(dir, 'lua'), apiKey, { groups: GROUPS, value: VALUE })
    const out: CaseResult[] = []
    // The Upstash path (@upstash/redis's wire) beside /v1's GET and PUT existing, on the same
    // keys, a round of each in turn.
    if (wants('GET') && wants('UPSTASH GET'))
      out.push(
        ...(await paired(server, [
          ['GET', s.get!],
          ['UPSTASH GET', s.upstashGet!],
        ])),
      )
    else if (wants('GET')) out.push(await measure(server, 'GET', server.url, s.get))
    if (wants('PUT new')) out.push(await measure(server, 'PUT new', server.url, s.putNew))
    if (wants('PUT existing') && wants('UPSTASH SET'))
      out.push(
        ...(await paired(server, [
          ['PUT existing', s.putExisting!],
          ['UPSTASH SET', s.upstashSet!],
        ])),
      )
    else if (wants('PUT existing'))
      out.push(await measure(server, 'PUT existing', server.url, s.putExisting))
    if (wants('TX 10 PUTs')) {
      const tx = await measure(server, 'TX 10 PUTs', server.url, s.tx10)
      tx.extra = { keysPerSecond: tx.rps * 10 }
      out.push(tx)
    }
    if (wants('INCR hot key'))
      out.push(await measure(server, 'INCR hot key', server.url, s.incrHot))
    // The watch's cost to writes: one writer (a PUT at a time, each answered after fsync)
    // with and without 100 watchers of its namespace, then 50 writers for the fan-out's reach.
    if (wants('watch')) {
      out.push(
        await measure(server, 'PUT existing, 1 writer', server.url, s.putExisting, undefined, 1),
      )
      out.push(await watchedPuts(server, apiKey, s.putExisting, 1))
      out.push(await watchedPuts(server, apiKey, s.putExisting, CONNECTIONS))
    }
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
    if (wants('after restart')) {
      await server.stop()
      server = await startCairn(SERVER_CORE, dataDir, plans, [], NODE_ARGS)
      out.push(await measure(server, 'GET after restart', server.url, s.get))
      out.push(await measure(server, 'LIST 100 after restart', server.url, s.list))
    }
    return out
  } finally {
    await server.stop()
  }
}

/** Watchers on the namespace while PUTs are measured (the watch fan-out case). */
const WATCHERS = 100

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
    const name = `PUT existing, ${connections === 1 ? '1 writer, ' : ''}${WATCHERS} watchers`
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

/** Loads the data set into Redis through redis-cli's pipe mode (RESP), the quickest way in. */
function seedRedis(port: number): void {
  let resp = ''
  for (let n = 0; n < GROUPS * 100; n++) {
    const k = keyOf(Math.floor(n / 100), n % 100).replace('/', '_')
    resp += `*3\r\n$3\r\nSET\r\n$${k.length}\r\n${k}\r\n$${VALUE.length}\r\n${VALUE}\r\n`
  }
  execFileSync('redis-cli', ['-p', String(port), '--pipe'], {
    input: resp,
    stdio: ['pipe', 'ignore', 'inherit'],
  })
}

async function webdisCases(dir: string): Promise<CaseResult[]> {
  const wdir = path.join(dir, 'webdis')
  fs.mkdirSync(wdir)
  const redis = await startRedis(SERVER_CORE, wdir, 'plain')
  const server = await startWebdis(SERVER_CORE, wdir, redis)
  try {
    seedRedis(redis.port)
    const s = writeScripts(path.join(dir, 'lua-webdis'), 'unused', { groups: GROUPS, value: VALUE })
    return [
      await measure(server, 'GET', server.url, s.redisGet),
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
      const s = writeScripts(path.join(dir, 'lua-redis'), apiKey, { groups: GROUPS, value: VALUE })
      out.push(await measure(server, 'GET', server.url, s.get))
      out.push(await measure(server, 'PUT existing', server.url, s.putExisting))
    } finally {
      await server.stop()
    }
    seedRedis(redis.port)
    const webdis = await startWebdis(SERVER_CORE, rdir, redis, 'webdis-redis')
    try {
      const s = writeScripts(path.join(dir, 'lua-webdis-redis'), 'unused', {
        groups: GROUPS,
        value: VALUE,
      })
      out.push(await measure(webdis, 'GET', webdis.url, s.redisGet))
      out.push(await measure(webdis, 'SET', webdis.url, s.redisSet))
    } finally {
      await webdis.stop()
    }
  } finally {
    await redis.stop()
  }
  return out
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
  const peer: Record<string, CaseResult | undefined> = {
    GET: find('webdis', 'GET'),
    'PUT new': find('webdis', 'SET'),
    'PUT existing': find('webdis', 'SET'),
    'GET 90 / PUT 10': undefined,
    'UPSTASH GET': find('webdis', 'GET'),
    'UPSTASH SET': find('webdis', 'SET'),
  }
  // Cairn on Redis is compared with webdis on the same Redis (sameRedisCases).
  const samePeer: Record<string, CaseResult | undefined> = {
    GET: find('webdis-redis', 'GET'),
    'PUT existing': find('webdis-redis', 'SET'),
  }
  const rows = [
    '| server | case | req/s | p50 ms | p99 ms | server CPU | Cairn / ceiling | Cairn / webdis |',
    '|---|---|---:|---:|---:|---:|---:|---:|',
  ]
  for (const c of all) {
    const vsCeiling = c.server === 'cairn' && ceiling ? `${fmt(c.rps / ceiling.rps, 2)}x` : ''
    const p =
      c.server === 'cairn'
        ? peer[c.name]
        : c.server === 'cairn-redis'
          ? samePeer[c.name]
          : undefined
    const vsPeer = p ? `${fmt(c.rps / p.rps, 2)}x` : ''
    const x = c.extra ?? {}
    const notes = [
      x.compactions !== undefined ? `${x.compactions} compactions` : '',
      x.keysPerSecond !== undefined ? `${fmt(x.keysPerSecond)} keys/s` : '',
      x.eventsPerSecond !== undefined
        ? `${fmt(x.eventsPerSecond)} events/s delivered, write to delivery p50 ${fmt(x.lagP50)} ms, p99 ${fmt(x.lagP99)} ms`
        : '',
    ].filter(Boolean)
    rows.push(
      `| ${c.server} | ${c.name}${notes.length ? ` (${notes.join('; ')})` : ''} | ${fmt(c.rps)} | ${fmt(c.p50, 3)} | ${fmt(c.p99, 3)} | ${fmt(c.cpu * 100)}% | ${vsCeiling} | ${vsPeer} |`,
    )
  }
  const get = find('cairn', 'GET')
  const put = find('cairn', 'PUT new')
  const list = find('cairn', 'LIST 100')
  const comp = find('cairn', 'GET during compaction')
  const getAfter = find('cairn', 'GET after restart')
  const listAfter = find('cairn', 'LIST 100 after restart')
  const set = find('webdis', 'SET')
  const rget = find('cairn-redis', 'GET')
  const rput = find('cairn-redis', 'PUT existing')
  const putExisting = find('cairn', 'PUT existing')
  const tx = find('cairn', 'TX 10 PUTs')
  const oneWriter = find('cairn', 'PUT existing, 1 writer')
  const watched = find('cairn', `PUT existing, 1 writer, ${WATCHERS} watchers`)
  const fanOut = find('cairn', `PUT existing, ${WATCHERS} watchers`)
  const upGet = find('cairn', 'UPSTASH GET')
  const upSet = find('cairn', 'UPSTASH SET')
  const verdict = (ok: boolean | undefined) =>
    ok === undefined ? 'not measured' : ok ? 'met' : 'MISSED'
  const targets = [
    `- GET at least 0.80x the ceiling, p99 at most 2 ms: ${get && ceiling ? `${fmt(get.rps / ceiling.rps, 2)}x, p99 ${fmt(get.p99, 3)} ms: ${verdict(get.rps >= 0.8 * ceiling.rps && get.p99 <= 2)}` : 'not measured'}`,
    `- durable PUT at least webdis SET, p99 under 5 ms: ${put && set ? `${fmt(put.rps / set.rps, 2)}x, p99 ${fmt(put.p99, 3)} ms: ${verdict(put.rps >= set.rps && put.p99 < 5)}` : 'not measured (webdis missing)'}`,
    `- LIST of 100 keys at least 0.6x GET: ${list && get ? `${fmt(list.rps)} req/s, ${fmt(list.rps / get.rps, 3)}x: ${verdict(list.rps >= 0.6 * get.rps)}` : 'not measured'}`,
    `- Cairn on Redis at least webdis on the same Redis: ${rget && rput && samePeer.GET && samePeer['PUT existing'] ? `GET ${fmt(rget.rps / samePeer.GET.rps, 2)}x, PUT ${fmt(rput.rps / samePeer['PUT existing'].rps, 2)}x: ${verdict(rget.rps >= samePeer.GET.rps && rput.rps >= samePeer['PUT existing'].rps)}` : 'not measured'}`,
    `- a transaction of 10 puts beside 10 single PUTs: ${tx && putExisting ? `${fmt(tx.rps * 10)} keys/s vs ${fmt(putExisting.rps)} PUTs/s: ${fmt((tx.rps * 10) / putExisting.rps, 2)}x` : 'not measured'}`,
    `- ${WATCHERS} watchers slow a writer by at most 10%: ${watched && oneWriter ? `${fmt(watched.rps / oneWriter.rps, 2)}x of one writer's PUTs, ${fmt(watched.extra?.eventsPerSecond ?? 0)} events/s delivered, write to delivery p99 ${fmt(watched.extra?.lagP99 ?? 0)} ms: ${verdict(watched.rps >= 0.9 * oneWriter.rps)}` : 'not measured'}`,
    `- watch fan-out under 50 writers: ${fanOut && putExisting ? `${fmt(fanOut.extra?.eventsPerSecond ?? 0)} events/s delivered to ${WATCHERS} watchers, PUTs at ${fmt(fanOut.rps / putExisting.rps, 2)}x of PUT existing (the server's core spent on delivery), write to delivery p99 ${fmt(fanOut.extra?.lagP99 ?? 0)} ms` : 'not measured'}`,
    `- after a restart (keys read from the checkpoint's base): ${getAfter && listAfter && get && list ? `GET ${fmt(getAfter.rps / get.rps, 2)}x of GET, LIST 100 ${fmt(listAfter.rps / list.rps, 2)}x of LIST 100, ${fmt(listAfter.rps / getAfter.rps, 2)}x of GET after restart` : 'not measured'}`,
    `- the Upstash path (@upstash/redis's wire: one-element /pipeline, base64) within 0.9x of /v1: ${upGet && upSet && get && putExisting ? `GET ${fmt(upGet.rps / get.rps, 2)}x of GET, SET ${fmt(upSet.rps / putExisting.rps, 2)}x of PUT existing${peer.GET && set ? `; ${fmt(upGet.rps / peer.GET.rps, 2)}x and ${fmt(upSet.rps / set.rps, 2)}x of webdis GET and SET` : ''}: ${verdict(upGet.rps >= 0.9 * get.rps && upSet.rps >= 0.9 * putExisting.rps)}` : 'not measured'}`,
    `- GET during compaction at least 0.8x GET, p99 at most twice GET's: ${comp && get ? `${fmt(comp.rps / get.rps, 2)}x, p99 ${fmt(comp.p99, 3)} vs ${fmt(get.p99, 3)} ms: ${verdict(comp.rps >= 0.8 * get.rps && comp.p99 <= 2 * get.p99)}` : 'not measured'}`,
  ]
  return `${rows.join('\n')}\n\nTargets:\n${targets.join('\n')}\n`
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
  const section = `<!-- http:start -->\n## HTTP\n\n\`npm run bench:http\` on ${new Date().toISOString().slice(0, 10)}: ${machine()}. wrk (1 thread, ${CONNECTIONS} connections) on core ${LOAD_CORE}, each server on core ${SERVER_CORE}; ${ROUNDS} rounds of ${SECONDS} s per case after a ${WARMUP} s warm-up, medians. Cairn runs with default durability (\`always\`: a PUT is answered after fsync), ${GROUPS * 100} keys of ${VALUE.length + 2}-byte values; webdis fronts redis-server with persistence off. \`cairn-redis\` is Cairn with \`--store\` on a one-node Redis Cluster (AOF, \`appendfsync always\`), beside \`webdis-redis\`: webdis on that same Redis.\n\n${table}<!-- http:end -->`
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
