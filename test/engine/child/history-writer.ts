// Writes one key at a time to a namespace with a history window until it is killed,
// reporting each write before it is made (`a`) and once acknowledged (`k`, with its version).
// Small segments and low thresholds keep compaction and checkpoints coming meanwhile.
//   node --import tsx history-writer.ts <dir> <seed>
import { open } from '../../../engine/index.js'
import { say, seeded } from './report.js'

const [dir, seedArg] = process.argv.slice(2)
const { rand, state } = seeded(Number(seedArg))

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
    const value = `${state()}:${i}:${'x'.repeat(Math.floor(rand() * 300))}`
    say({ a: 'put', key, value })
    const res = await db.put('h', key, value)
    say({ k: res.version })
  }
}
