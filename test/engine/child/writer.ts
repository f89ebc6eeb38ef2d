// Writes to a database until it is killed, reporting on stdout each write it attempts
// (`a` lines, before the call) and each write acknowledged (`k` lines, after the promise
// resolved). Lines go out with writeSync so a line is in the pipe before the next write.
//   node --import tsx writer.ts <dir> <writes|compact|checkpoint> <run> <seed>
import { open } from '../../../engine/index.js'
import { say, seeded } from './report.js'
import type { OpenOptions } from '../../../engine/types.js'

const [dir, mode, runArg, seedArg] = process.argv.slice(2)
const run = Number(runArg)
const { rand } = seeded(Number(seedArg))

const compactMode = mode === 'compact'
const checkpointMode = mode === 'checkpoint'
const options: OpenOptions = compactMode
  ? { segmentBytes: 8 * 1024, compactionMinDeadBytes: 16 * 1024, compactionDeadRatio: 0.3 }
  : checkpointMode
    ? { segmentBytes: 32 * 1024, checkpointBytes: 0 }
    : { segmentBytes: 32 * 1024 }

say({ start: true })
const db = await open(dir, options)
await db.createNamespace('c')
say({ ready: true })

let id = 0
const nextId = () => `${run}:${id++}`

async function putLoop(loop: number, keyCount: number) {
  for (;;) {
    const key = `p${loop}-${Math.floor(rand() * keyCount)}`
    const opId = nextId()
    if (rand() < 0.2) {
      say({ a: 'del', id: opId, key })
      await db.delete('c', key)
      say({ k: opId })
    } else {
      const value = `${opId}:${'x'.repeat(Math.floor(rand() * (compactMode ? 400 : 200)))}`
      say({ a: 'put', id: opId, key, value })
      const res = await db.put('c', key, value)
      say({ k: opId, ver: res.version })
    }
  }
}

async function batchLoop(loop: number) {
  const keys = Array.from({ length: 5 }, (_, i) => `b${loop}-${i}`)
  for (;;) {
    const opId = nextId()
    const remove = rand() < 0.25
    say({ a: 'batch', id: opId, keys, value: remove ? null : opId })
    const res = await db.batch(
      keys.map((key) =>
        remove ? { type: 'delete', ns: 'c', key } : { type: 'put', ns: 'c', key, value: opId },
      ),
    )
    say({ k: opId, ver: res.version })
  }
}

async function incrementLoop() {
  for (;;) {
    const opId = nextId()
    say({ a: 'inc', id: opId, key: 'n' })
    const n = await db.increment('c', 'n', 1)
    say({ k: opId, n })
  }
}

async function compactLoop() {
  for (;;) {
    await db.compact()
    say({ compacted: true })
    await new Promise((r) => setTimeout(r, rand() * 20))
  }
}

async function checkpointLoop() {
  for (;;) {
    await db.checkpoint()
    say({ checkpointed: true })
  }
}

const loops = [
  putLoop(0, 8),
  putLoop(1, 8),
  putLoop(2, 8),
  putLoop(3, 8),
  batchLoop(0),
  batchLoop(1),
  incrementLoop(),
]
if (compactMode) loops.push(compactLoop(), putLoop(4, 8))
if (checkpointMode) loops.push(checkpointLoop())
await Promise.all(loops)
