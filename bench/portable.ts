// Export and import throughput on the embedded engine, beside what they replace: an export
// beside walking the same entries with `include=values` pages, an import beside the same
// entries sent as transactions of 1,000 puts, and an export at a point beside the export of
// the present. One real server, one run, ratios reported. Beside each wall time, the CPU
// the server's process spent (all its threads, from /proc): on a loaded machine the wall
// time says more of the neighbours than of the server.
//   node --import tsx bench/portable.ts [--entries N] [--value-bytes B] [--cpu-prof DIR]
import fs from 'node:fs'
import http from 'node:http'
import { startServer } from '../test/helpers/server.js'

const argv = process.argv.slice(2)
const opt = (name: string, def: number) => {
  const i = argv.indexOf(name)
  return i >= 0 ? Number(argv[i + 1]) : def
}
const N = opt('--entries', 200_000)
const VALUE = opt('--value-bytes', 100)
const profIndex = argv.indexOf('--cpu-prof')
const profDir = profIndex >= 0 ? argv[profIndex + 1] : undefined

const agent = new http.Agent({ keepAlive: true })

function request(
  base: string,
  key: string,
  method: string,
  path: string,
  body?: string | Buffer,
  type = 'application/json',
): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${base}${path}`,
      { method, agent, headers: { 'x-api-key': key, 'content-type': type } },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks) }))
        res.on('error', reject)
      },
    )
    req.on('error', reject)
    req.end(body)
  })
}

const value = JSON.stringify({ s: 'x'.repeat(Math.max(0, VALUE - 8)) })
const key = (i: number) => `k/${String(i).padStart(8, '0')}`
const ndjson = Buffer.from(
  Array.from({ length: N }, (_, i) => `{"key":"${key(i)}","value":${value}}\n`).join(''),
)

const srv = await startServer({
  nodeArgs: profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [],
  plans: {
    plans: [
      {
        id: 'free',
        name: 'Free',
        priceUsdPerMonth: 0,
        requestsPerDay: null,
        ratePerSecond: null,
        burst: null,
        maxNamespaces: 100,
        maxStorageBytes: null,
        maxValueBytes: 1048576,
        selfServe: true,
      },
    ],
    default: 'free',
    upgradeUrl: null,
  },
})
/** Seconds of CPU the server's process has spent (user and system, every thread). */
const serverCpu = () => {
  const stat = fs.readFileSync(`/proc/${srv.proc!.pid}/stat`, 'utf8')
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(f[11]) + Number(f[12])) / 100
}
let cpu0 = 0
const cpuFrom = () => {
  cpu0 = serverCpu()
}
const cpuSince = () => serverCpu() - cpu0
const secs = (wall: number, cpu: number) => `${wall.toFixed(2)} s, server CPU ${cpu.toFixed(2)} s`
try {
  const acct = await srv.createAccount()
  const base = srv.baseUrl
  const k = acct.apiKey
  for (const ns of ['a', 'b'])
    await request(base, k, 'POST', '/namespaces', JSON.stringify({ name: ns }))

  cpuFrom()
  let t0 = performance.now()
  const imp = await request(base, k, 'POST', '/a?import=1', ndjson, 'application/x-ndjson')
  const importS = (performance.now() - t0) / 1000
  const importCpu = cpuSince()
  if (imp.status !== 200) throw new Error(`import: ${imp.status} ${imp.body}`)

  cpuFrom()
  t0 = performance.now()
  for (let i = 0; i < N; i += 1000) {
    const ops = []
    for (let j = i; j < Math.min(N, i + 1000); j++)
      ops.push(`{"op":"put","key":"${key(j)}","value":${value}}`)
    const r = await request(base, k, 'POST', '/b', `{"ops":[${ops.join(',')}]}`)
    if (r.status !== 200) throw new Error(`transaction: ${r.status}`)
  }
  const txS = (performance.now() - t0) / 1000
  const txCpu = cpuSince()

  cpuFrom()
  t0 = performance.now()
  const exp = await request(base, k, 'GET', '/a?export=1')
  const exportS = (performance.now() - t0) / 1000
  const exportCpu = cpuSince()
  const lines = exp.body.toString('latin1').split('\n').length - 2

  // The same entries at a point (`at=`, read through the engine's listAt), half of them
  // rewritten since so that the window holds them.
  const point = JSON.parse(exp.body.subarray(0, exp.body.indexOf(10)).toString('utf8')).version
  for (let i = 0; i < N; i += 2000) {
    const ops = []
    for (let j = i; j < Math.min(N, i + 1000); j++)
      ops.push(`{"op":"put","key":"${key(j)}","value":${value}}`)
    const r = await request(base, k, 'POST', '/a', `{"ops":[${ops.join(',')}]}`)
    if (r.status !== 200) throw new Error(`transaction: ${r.status}`)
  }
  cpuFrom()
  t0 = performance.now()
  const past = await request(base, k, 'GET', `/a?export=1&at=${point}`)
  const pastS = (performance.now() - t0) / 1000
  const pastCpu = cpuSince()
  if (past.body.length !== exp.body.length) throw new Error('the export at the point differs')

  cpuFrom()
  t0 = performance.now()
  let walked = 0
  let walkedBytes = 0
  let cursor: string | undefined
  do {
    const r = await request(
      base,
      k,
      'GET',
      `/a?include=values&limit=1000${cursor ? `&cursor=${cursor}` : ''}`,
    )
    walkedBytes += r.body.length
    const page = JSON.parse(r.body.toString('utf8'))
    walked += page.entries.length
    cursor = page.cursor
  } while (cursor)
  const walkS = (performance.now() - t0) / 1000
  const walkCpu = cpuSince()

  const mb = exp.body.length / 1e6
  console.log(`entries: ${N}, value bytes: ${value.length}, export body: ${mb.toFixed(1)} MB`)
  console.log(
    `import:  ${(N / importS).toFixed(0)} entries/s  (transactions of 1,000 puts: ${(N / txS).toFixed(0)} entries/s; ratio ${(txS / importS).toFixed(2)}x)`,
  )
  console.log(
    `export:  ${(mb / exportS).toFixed(1)} MB/s, ${(lines / exportS).toFixed(0)} entries/s  (include=values pages: ${(walkedBytes / 1e6 / walkS).toFixed(1)} MB/s, ${(walked / walkS).toFixed(0)} entries/s; ratio ${(walkS / exportS).toFixed(2)}x)`,
  )
  console.log(
    `export at a point (half its entries rewritten since): ${(mb / pastS).toFixed(1)} MB/s, ${(lines / pastS).toFixed(0)} entries/s (ratio to the export of the present ${(exportS / pastS).toFixed(2)}x)`,
  )
  console.log(
    `times: import ${secs(importS, importCpu)}; transactions ${secs(txS, txCpu)}; export ${secs(exportS, exportCpu)}; export at a point ${secs(pastS, pastCpu)}; pages ${secs(walkS, walkCpu)}`,
  )
  console.log(
    `per server CPU second: import ${(N / importCpu).toFixed(0)} entries; export ${(mb / exportCpu).toFixed(1)} MB, ${(lines / exportCpu).toFixed(0)} entries; export at a point ${(mb / pastCpu).toFixed(1)} MB`,
  )
} finally {
  // A profile is written as the process exits by itself (SIGTERM), not when it is killed.
  if (profDir) await srv.terminate()
  await srv.stop()
}
