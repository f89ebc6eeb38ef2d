// One process per directory. A LOCK file holds the owner's pid; a pid that no longer runs
// (the owner was killed) does not block. Within one process a set of open directories
// catches a second open, since the pid would match our own.
import fs from 'node:fs'
import path from 'node:path'
import { EngineError } from './errors.js'

const openHere = new Set<string>()

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

export function acquireLock(dir: string): () => void {
  const real = fs.realpathSync(dir)
  if (openHere.has(real)) {
    throw new EngineError('LOCKED', `${dir} is already open in this process`)
  }
  const file = path.join(real, 'LOCK')
  let held = ''
  try {
    held = fs.readFileSync(file, 'utf8').trim()
  } catch {}
  const pid = Number(held)
  if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) {
    throw new EngineError('LOCKED', `${dir} is in use by process ${pid}`)
  }
  const tmp = `${file}.${process.pid}`
  fs.writeFileSync(tmp, String(process.pid))
  fs.renameSync(tmp, file)
  openHere.add(real)
  return () => {
    openHere.delete(real)
    try {
      if (fs.readFileSync(file, 'utf8').trim() === String(process.pid)) fs.rmSync(file)
    } catch {}
  }
}
