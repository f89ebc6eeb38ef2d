// What a bench sets up on each side before it measures: the plan, Cairn's account and
// namespace `bench`, and the data set, on Cairn (through its API) and on Redis (for webdis).
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import http from 'node:http'
import path from 'node:path'
import { redisKey } from './scripts.js'
import { root } from './servers.js'

/**
 * A plans file with one plan whose rate limit the bench never reaches: every request still
 * takes a token from its account's bucket, as a real plan's requests do, and the limiter's
 * cost counts in every case.
 */
export function benchPlans(dir: string): string {
  const plans = path.join(dir, 'plans.json')
  const bench = {
    id: 'bench',
    name: 'Bench',
    requestsPerDay: null,
    ratePerSecond: 10_000_000,
    burst: 10_000_000,
    maxNamespaces: null,
    maxStorageBytes: null,
    maxValueBytes: 1048576,
    maxWatches: null,
  }
  fs.writeFileSync(
    plans,
    JSON.stringify({
      // `bench` keeps the default history window (a day, 64 MiB: every overwrite keeps the
      // version it supersedes); `bench-no-history` keeps none, for what history costs a PUT.
      plans: [
        bench,
        {
          ...bench,
          id: 'bench-no-history',
          name: 'Bench, no history',
          historySeconds: 0,
          historyBytes: 0,
        },
      ],
      default: 'bench',
      upgradeUrl: null,
    }),
  )
  return plans
}

/** An account on the plan `bench` (or `plan`) and its namespace `bench`; resolves with the API key. */
export async function cairnAccount(
  url: string,
  dataDir: string,
  store: string[] = [],
  plan = 'bench',
): Promise<string> {
  const apiKey = cairnCli(dataDir, [
    'account',
    'create',
    '--email',
    `${plan}@example.com`,
    '--plan',
    plan,
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

export function cairnCli(dataDir: string, args: string[]): any {
  const out = execFileSync(
    process.execPath,
    [path.join(root, 'dist/server/cli/index.js'), ...args, '--data', dataDir, '--json'],
    { cwd: root },
  )
  return JSON.parse(out.toString().trim().split('\n').pop()!)
}

/** PUTs `keys` (each `value`) into the namespace `bench` over a few keep-alive connections. */
export async function seedCairnKeys(
  url: string,
  apiKey: string,
  keys: string[],
  value: string,
): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 32 })
  const u = new URL(url)
  const body = JSON.stringify({ value })
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
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      for (let n = next++; n < keys.length; n = next++) await put(keys[n]!)
    }),
  )
  agent.destroy()
}

/** Loads `keys` (as webdis names them) into Redis through redis-cli's pipe mode (RESP). */
export function seedRedisKeys(port: number, keys: string[], value: string, prefix = ''): void {
  let resp = ''
  for (const key of keys) {
    const k = redisKey(key, prefix)
    resp += `*3\r\n$3\r\nSET\r\n$${k.length}\r\n${k}\r\n$${value.length}\r\n${value}\r\n`
  }
  execFileSync('redis-cli', ['-p', String(port), '--pipe'], {
    input: resp,
    stdio: ['pipe', 'ignore', 'inherit'],
  })
}
