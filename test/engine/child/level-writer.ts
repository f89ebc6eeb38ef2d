// Writes to a CairnLevel database until it is killed, reporting on stdout each write it
// attempts (`a` lines, before the call) and each write acknowledged (`k` lines, after the
// promise resolved). Keys are reported as the hex of their bytes.
//   node --import tsx level-writer.ts <dir> <run> <seed>
import { CairnLevel } from '../../../engine/level/index.js'
import { say, seeded } from './report.js'

const [dir, runArg, seedArg] = process.argv.slice(2)
const run = Number(runArg)
const { rand } = seeded(Number(seedArg))

say({ start: true })
// Level's default: a write is acknowledged once the OS has it (no fsync), which a killed
// process cannot take back.
const db = new CairnLevel<Buffer, string>(dir, {
  keyEncoding: 'buffer',
  engine: { segmentBytes: 32 * 1024 },
})
await db.open()
say({ ready: true })

let id = 0
const nextId = () => `${run}:${id++}`
const hex = (b: Buffer) => b.toString('hex')

/** Keys of one loop: text, and bytes no UTF-8 string has (0x00 first, 0xff). */
function keyOf(loop: number, i: number): Buffer {
  if (loop % 2 === 0) return Buffer.from(`p${loop}/${i}`)
  return Buffer.from([0x00, loop, 0xff, i])
}

async function putLoop(loop: number) {
  for (;;) {
    const key = keyOf(loop, Math.floor(rand() * 8))
    const opId = nextId()
    if (rand() < 0.2) {
      say({ a: 'del', id: opId, key: hex(key) })
      await db.del(key)
    } else {
      const value = `${opId}:${'x'.repeat(Math.floor(rand() * 300))}`
      say({ a: 'put', id: opId, key: hex(key), value })
      await db.put(key, value)
    }
    say({ k: opId })
  }
}

/** Five keys written together, by batch() or a chained batch, all or nothing. */
async function batchLoop(loop: number, chained: boolean) {
  const keys = Array.from({ length: 5 }, (_, i) => Buffer.from([0xfe, loop, i]))
  for (;;) {
    const opId = nextId()
    const remove = rand() < 0.25
    say({ a: 'batch', id: opId, keys: keys.map(hex), value: remove ? null : opId })
    if (chained) {
      const b = db.batch()
      for (const key of keys) remove ? b.del(key) : b.put(key, opId)
      await b.write()
    } else {
      await db.batch(
        keys.map((key) =>
          remove ? { type: 'del' as const, key } : { type: 'put' as const, key, value: opId },
        ),
      )
    }
    say({ k: opId })
  }
}

await Promise.all([
  putLoop(0),
  putLoop(1),
  putLoop(2),
  putLoop(3),
  batchLoop(0, false),
  batchLoop(1, true),
])
