// Writes one key at a time to a namespace with a history window until it is killed,
// reporting each write before it is made (`a`) and once acknowledged (`k`, with its version).
// Small segments and low thresholds keep compaction and checkpoints coming meanwhile.
//   node --import tsx history-writer.ts <dir> <seed>
import fs from 'node:fs'
import { open } from '../../../engine/index.js'

const [dir, seedArg] = process.argv.slice(2)
let seed = Number(seedArg) >>> 0
const rand = () => {
  seed = (seed + 0x6d2b79f5) >>> 0
  let x = seed
  x = Math.imul(x ^ (x >>> 15), x | 1)
  x ^= x + Math.imul(x ^ (x >>> 7), x | 61)
  return ((x ^ (x >>> 14)) >>> 0) / 4294967296
}
const pause = new Int32Array(new SharedArrayBuffer(4))
const say = (o: object) => {
  let buf = Buffer.from(`${JSON.stringify(o)}\n`)
  while (buf.length > 0) {
    try {
      buf = buf.subarray(fs.writeSync(1, buf))
    } catch (err) {
      if ((err as { code?: string }).code !== 'EAGAIN') throw err
      Atomics.wait(pause, 0, 0, 1)
    }
  }
}

const db = await open(dir, {
  segmentBytes: 4096,
  compactionMinDeadBytes: 4096,
  compactionDeadRatio: 0.2,
  checkpointBytes: 16 * 1024,
})
await db.createNamespace('h')
if (db.getHistory('h') === undefined) db.setHistory('h', { seconds: 86_400, bytes: 1 << 26 })
say({ ready: true, version: db.namespaceVersion('h') })
for (let i = 0; ; i++) {
  if (i % 25 === 0) say({ compactions: db.stats().compactions })
  const key = `k${Math.floor(rand() * 8)}`
  if (rand() < 0.2 && db.getNow('h', key) !== undefined) {
    say({ a: 'del', key })
    await db.delete('h', key)
    say({ k: db.namespaceVersion('h') })
  } else {
    const value = `${seed}:${i}:${'x'.repeat(Math.floor(rand() * 300))}`
    say({ a: 'put', key, value })
    const res = await db.put('h', key, value)
    say({ k: res.version })
  }
}
