// wrk Lua scripts. Requests are built once at start and replayed in a cycle, so wrk spends
// its core sending rather than formatting strings; only new-key PUTs are made per request.
import fs from 'node:fs'
import path from 'node:path'

const lua = (s: string) => JSON.stringify(s)

function cycle(requests: string[]): string {
  return `local reqs = {}
${requests.map((r) => `reqs[#reqs+1] = ${r}`).join('\n')}
local i = 0
request = function()
  i = i % #reqs + 1
  return reqs[i]
end
`
}

export interface Dataset {
  /** Keys are g0000/i00 ... : `groups` prefixes of 100 keys each. */
  groups: number
  value: string
  /**
   * How many distinct keys the GET and PUT cycles visit (default: every key, each once per
   * cycle, in a shuffled order). A few thousand of many more is a hot set that stays in the
   * CPU's caches, which flatters a server whose lookups are pointer chases (ours) more than
   * one whose time goes on system calls (Redis).
   */
  hot?: number
  /** Prefix of the Redis keys webdis is sent (a hash tag that keeps them on one master). */
  redisPrefix?: string
}

/** The Redis key webdis uses for the data set's key `k` (webdis paths have no `/` in keys). */
export const redisKey = (k: string, prefix = '') => `${prefix}${k.replace('/', '_')}`

export const keyOf = (g: number, i: number) =>
  `g${String(g).padStart(4, '0')}/i${String(i).padStart(2, '0')}`

function rand(seed: number): () => number {
  let s = seed >>> 0
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0
    return s / 4294967296
  }
}

export function writeScripts(dir: string, apiKey: string, d: Dataset): Record<string, string> {
  fs.mkdirSync(dir, { recursive: true })
  const r = rand(42)
  // Built before wrk has set its own Host header, so each request carries one explicitly.
  const host = '{["Host"]="127.0.0.1"}'
  const headers = `{["Host"]="127.0.0.1", ["x-api-key"]=${lua(apiKey)}, ["content-type"]="application/json"}`
  const body = lua(`{"value":${JSON.stringify(d.value)}}`)
  // Every key once per cycle in a shuffled order (or the first `hot` of that order); the
  // same seed gives Cairn and webdis the same keys in the same order.
  const keys = Array.from({ length: d.groups * 100 }, (_, n) => keyOf(Math.floor(n / 100), n % 100))
  for (let i = keys.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1))
    ;[keys[i], keys[j]] = [keys[j]!, keys[i]!]
  }
  const visited = keys.slice(0, Math.min(keys.length, d.hot ?? keys.length))
  const n = visited.length
  let at = 0
  const randomKey = () => keys[Math.floor(r() * keys.length)]!
  const nextKey = () => visited[at++ % n]!
  const wire = (k: string) => encodeURIComponent(redisKey(k, d.redisPrefix))
  const get = (k: string) => `wrk.format("GET", ${lua(`/v1/bench/${k}`)}, ${headers})`
  const put = (k: string) => `wrk.format("PUT", ${lua(`/v1/bench/${k}`)}, ${headers}, ${body})`
  const upstashHeaders = `{["Host"]="127.0.0.1", ["authorization"]=${lua(`Bearer ${apiKey}`)}, ["content-type"]="application/json", ["upstash-encoding"]="base64", ["upstash-sync-token"]="1", ["upstash-telemetry-runtime"]="node@v20", ["upstash-telemetry-platform"]="unknown", ["upstash-telemetry-sdk"]="@upstash/redis@v1.39.0"}`
  const upstash = (commands: string[][]) =>
    `wrk.format("POST", "/upstash/bench/pipeline", ${upstashHeaders}, ${lua(JSON.stringify(commands))})`
  const files: Record<string, string> = {
    get: cycle(Array.from({ length: n }, () => get(nextKey()))),
    putExisting: cycle(Array.from({ length: n }, () => put(nextKey()))),
    putNew: `local n = 0
request = function()
  n = n + 1
  return wrk.format("PUT", "/v1/bench/new/" .. n .. "-" .. math.random(1, 1000000000), ${headers}, ${body})
end
`,
    list: cycle(
      Array.from(
        { length: 2000 },
        () =>
          `wrk.format("GET", ${lua(`/v1/bench?prefix=g${String(Math.floor(r() * d.groups)).padStart(4, '0')}%2F&limit=100`)}, ${headers})`,
      ),
    ),
    // A transaction of 10 puts of distinct existing keys: beside 10 single PUTs.
    tx10: cycle(
      Array.from({ length: 2000 }, () => {
        const keys = new Set<string>()
        while (keys.size < 10) keys.add(randomKey())
        const ops = [...keys].map((k) => ({ op: 'put', key: k, value: d.value }))
        return `wrk.format("POST", "/v1/bench", ${headers}, ${lua(JSON.stringify({ ops }))})`
      }),
    ),
    incrHot: cycle([`wrk.format("PATCH", "/v1/bench/hot", ${headers}, ${lua('{"increment":1}')})`]),
    mixed: cycle(
      Array.from({ length: n }, (_, i) => (i % 10 === 9 ? put(nextKey()) : get(nextKey()))),
    ),
    // @upstash/redis's wire: each command a one-element POST .../pipeline (auto-pipelining),
    // base64 answers asked for, the sync token and telemetry headers it sends.
    upstashGet: cycle(Array.from({ length: n }, () => upstash([['get', nextKey()]]))),
    upstashSet: cycle(Array.from({ length: n }, () => upstash([['set', nextKey(), d.value]]))),
    // webdis: the same keys in the same order as Cairn's GET and PUT existing.
    redisGet: cycle(
      Array.from(
        { length: n },
        (_, i) => `wrk.format("GET", ${lua(`/GET/${wire(visited[i]!)}`)}, ${host})`,
      ),
    ),
    redisSet: cycle(
      Array.from(
        { length: n },
        (_, i) =>
          `wrk.format("GET", ${lua(`/SET/${wire(visited[i]!)}/${encodeURIComponent(d.value)}`)}, ${host})`,
      ),
    ),
  }
  const paths: Record<string, string> = {}
  for (const [name, text] of Object.entries(files)) {
    paths[name] = path.join(dir, `${name}.lua`)
    fs.writeFileSync(paths[name]!, text)
  }
  return paths
}
