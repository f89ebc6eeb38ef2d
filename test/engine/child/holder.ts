// Opens a database and keeps it open until killed, so another process can try the lock.
// Prints `ready` once open, or `error <code>` if open failed.
import { open } from '../../../engine/index.js'

const dir = process.argv[2]
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
