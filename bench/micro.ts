// Micro-benchmarks (benchmark.js) of the functions every request runs, each beside the
// nearest thing a platform or a peer would do in its place, in one run, so a change to one
// shows its cost in isolation:
//   npm run bench:micro              every case; writes bench/RESULTS.md (micro section) and
//                                    bench/results/micro-*.json
//   npm run bench:micro -- --quick   a short run that prints only
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { crc32 } from 'node:zlib'
import Benchmark from 'benchmark'
import { open } from '../engine/index.js'
import { ENTRY_HEADER, REC_HEADER, checkRecord, sealEntry, sealRecord } from '../engine/record.js'
import { decodeCursor, encodeCursor } from '../server/wire/cursor.js'
import { parsePutBody } from '../server/wire/json-body.js'
import { type Parsed, Route, parsePath } from '../server/v1/paths.js'
import { decodeKey } from '../server/wire/keys.js'
import { formatResults } from './format.js'

const here = path.dirname(fileURLToPath(import.meta.url))
const quick = process.argv.includes('--quick')
const MAX_TIME = quick ? 0.3 : 2

interface Case {
  name: string
  ours: () => unknown
  /** The peer: what would run in its place without Cairn's code. */
  peer: [string, () => unknown]
}

// ---- fixtures ----
const parsed: Parsed = { route: Route.NotFound, ns: '', rawKey: '' }
const url = '/v1/sessions/user/42'
const rawKey = 'user%2F42%20caf%C3%A9'
const body = Buffer.from(
  '{"value":{"theme":"dark","id":12345678901234567890,"tags":["a","b"]},"ttl":60}',
)
const key = 'user/42'
const value = Buffer.from('{"theme":"dark","id":12345678901234567890,"tags":["a","b"]}')
const rec = Buffer.alloc(REC_HEADER + ENTRY_HEADER + key.length + value.length)
const encode = () => {
  rec.write(key, REC_HEADER + ENTRY_HEADER, 'utf8')
  value.copy(rec, REC_HEADER + ENTRY_HEADER + key.length)
  sealEntry(rec, REC_HEADER, 1, 1, key.length, 7, 42, 0, value.length)
  sealRecord(rec, 0, ENTRY_HEADER + key.length + value.length, 1)
}
encode()
const cursor = encodeCursor('user/10', 'user/')

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-micro-'))
const db = await open(dir, { durability: 'none' })
await db.createNamespace('n')
const map = new Map<string, { seg: number; off: number; len: number; version: number }>()
for (let i = 0; i < 100_000; i++) {
  const k = `user/${String(i).padStart(6, '0')}`
  await db.put('n', k, value)
  map.set(k, { seg: 1, off: i * 100, len: 100, version: i })
}
const sortedKeys = [...map.keys()]
// The same keys in a database opened from its checkpoint: there they are read from its base
// (engine/base-keys.ts), bytes and a hash table, not strings in a Map.
const baseDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-micro-base-'))
let reopened = await open(baseDir, { durability: 'none' })
await reopened.createNamespace('n')
for (let i = 0; i < sortedKeys.length; i += 1000)
  await reopened.batch(
    sortedKeys.slice(i, i + 1000).map((k) => ({ type: 'put' as const, ns: 'n', key: k, value })),
  )
await reopened.close()
reopened = await open(baseDir, { durability: 'none' })
await reopened.indexReady()
let i = 0
const sliceOfSorted: [string, () => unknown] = [
  'binary search + slice of a sorted array',
  () => {
    let lo = 0
    let hi = sortedKeys.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (sortedKeys[mid]! < 'user/0123') lo = mid + 1
      else hi = mid
    }
    return sortedKeys.slice(lo, lo + 100).filter((k) => k.startsWith('user/0123'))
  },
]
const nextKey = () => {
  i = (i + 7919) % sortedKeys.length
  return sortedKeys[i]!
}

const cases: Case[] = [
  {
    name: 'request path parse (/v1/{ns}/{key})',
    ours: () => parsePath(url, parsed),
    peer: ['new URL(path, base)', () => new URL(url, 'http://x').pathname.split('/')],
  },
  {
    name: 'key decoding (percent-encoded UTF-8)',
    ours: () => decodeKey(rawKey),
    peer: ['decodeURIComponent', () => decodeURIComponent(rawKey)],
  },
  {
    name: 'PUT body scan (value kept as text)',
    ours: () => parsePutBody(body, 1 << 20, Date.now()),
    peer: ['JSON.parse', () => JSON.parse(body.toString('utf8'))],
  },
  {
    name: 'record encode (one put)',
    ours: encode,
    peer: ['crc32 of the same bytes alone', () => crc32(rec)],
  },
  {
    name: 'record decode and check',
    ours: () => checkRecord(rec, 0, rec.length),
    peer: ['crc32 of the same bytes alone', () => crc32(rec)],
  },
  {
    name: 'get from the index (getNow, 100k keys, cached value)',
    ours: () => db.getNow('n', nextKey()),
    peer: ['Map.get, then a copy of the value', () => map.get(nextKey()) && Buffer.from(value)],
  },
  {
    name: 'prefix scan step (list 100 keys)',
    ours: () => db.list('n', { prefix: 'user/0123', limit: 100 }),
    peer: sliceOfSorted,
  },
  {
    name: 'get from a checkpoint base (getNow, 100k keys)',
    ours: () => reopened.getNow('n', nextKey()),
    peer: ['Map.get, then a copy of the value', () => map.get(nextKey()) && Buffer.from(value)],
  },
  {
    name: 'prefix scan step from a checkpoint base (list 100)',
    ours: () => reopened.list('n', { prefix: 'user/0123', limit: 100 }),
    peer: sliceOfSorted,
  },
  {
    name: "a listing's answer from a checkpoint base (100 keys as JSON bytes)",
    ours: () => reopened.listNow('n', { prefix: 'user/0123', limit: 100, json: true })!.json,
    peer: [
      'the same keys as strings, then JSON.stringify and UTF-8',
      () =>
        Buffer.from(
          JSON.stringify(reopened.listNow('n', { prefix: 'user/0123', limit: 100 })!.keys),
        ),
    ],
  },
  {
    name: 'list cursor encode + decode',
    ours: () => decodeCursor(encodeCursor('user/10', 'user/')),
    peer: [
      'base64url round trip',
      () => Buffer.from(Buffer.from(cursor, 'base64url').toString('base64url'), 'base64url'),
    ],
  },
]

function hz(fn: () => unknown): Promise<{ hz: number; rme: number }> {
  return new Promise((resolve) => {
    const b = new Benchmark({
      fn,
      maxTime: MAX_TIME,
      onComplete: () => resolve({ hz: b.hz, rme: b.stats.rme }),
    })
    b.run()
  })
}

const rows: {
  name: string
  ours: number
  peerName: string
  peer: number
  ratio: number
  rme: number
}[] = []
for (const c of cases) {
  const ours = await hz(c.ours)
  const peer = await hz(c.peer[1])
  rows.push({
    name: c.name,
    ours: ours.hz,
    peerName: c.peer[0],
    peer: peer.hz,
    ratio: ours.hz / peer.hz,
    rme: Math.max(ours.rme, peer.rme),
  })
  console.log(
    `${c.name.padEnd(48)} ${Math.round(ours.hz).toLocaleString('en').padStart(14)} ops/s   ${c.peer[0].padEnd(32)} ${Math.round(peer.hz).toLocaleString('en').padStart(14)} ops/s   ${(ours.hz / peer.hz).toFixed(2)}x  ±${ours.rme.toFixed(1)}%`,
  )
}
await db.close()
await reopened.close()
fs.rmSync(dir, { recursive: true, force: true })
fs.rmSync(baseDir, { recursive: true, force: true })

if (!quick) {
  const date = new Date().toISOString()
  const table = [
    '| function | ours (ops/s) | peer | peer (ops/s) | ours/peer | ± |',
    '| --- | ---: | --- | ---: | ---: | ---: |',
    ...rows.map(
      (r) =>
        `| ${r.name} | ${Math.round(r.ours).toLocaleString('en')} | ${r.peerName} | ${Math.round(r.peer).toLocaleString('en')} | ${r.ratio.toFixed(2)}x | ${r.rme.toFixed(1)}% |`,
    ),
  ].join('\n')
  const block = [
    '<!-- micro-bench:start -->',
    '## Micro-benchmarks: the hot functions',
    '',
    `\`npm run bench:micro\`, ${date.slice(0, 10)}, Node ${process.version}, benchmark.js ${MAX_TIME} s per function,`,
    'each beside the nearest platform or peer operation, in one run. The peer is a yardstick for',
    'scale, not a rival doing the same work: the ratio shows when one of ours changes cost.',
    '',
    table,
    '<!-- micro-bench:end -->',
  ].join('\n')
  const file = path.join(here, 'RESULTS.md')
  const existing = fs.readFileSync(file, 'utf8')
  const re = /<!-- micro-bench:start -->[\s\S]*?<!-- micro-bench:end -->/
  fs.writeFileSync(
    file,
    re.test(existing) ? existing.replace(re, block) : `${existing.trimEnd()}\n\n${block}\n`,
  )
  formatResults(file)
  fs.writeFileSync(
    path.join(here, 'results', `micro-${date.slice(0, 10)}.json`),
    `${JSON.stringify({ date, node: process.version, maxTime: MAX_TIME, rows }, null, 2)}\n`,
  )
  console.log('\nwrote bench/RESULTS.md and bench/results/micro-*.json')
}
