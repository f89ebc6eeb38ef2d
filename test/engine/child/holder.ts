// Opens a database and keeps it open until killed, so another process can try the lock.
// Prints `ready` once open, or `error <code>` if open failed. With a second argument (a time,
// in ms since the epoch) it opens at that moment, to race other processes for the lock.
import { open } from '../../../engine/index.js'

const dir = process.argv[2]
const at = Number(process.argv[3] ?? 0)
while (Date.now() < at) {} // a busy wait: the racers start within a millisecond of each other
try {
  const db = await open(dir)
  await db.createNamespace('held')
  await db.put('held', 'pid', process.pid)
  process.stdout.write('ready\n')
  setInterval(() => {}, 1 << 30)
} catch (err) {
  process.stdout.write(`error ${(err as { code?: string }).code}\n`)
  process.exit(0)
}
