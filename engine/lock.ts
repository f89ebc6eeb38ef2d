// One process per directory. The LOCK file is created exclusively (O_EXCL) and holds the
// owner's pid, so of two processes starting together only one gets it. A LOCK whose pid no
// longer runs (the owner was killed) is stale and taken over. Within one process a set of
// open directories catches a second open, since the pid would be our own.
import fs from 'node:fs'
import path from 'node:path'
import { EngineError } from './errors.js'
import { fsyncDir, io } from './io.js'

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
  for (let attempt = 0; ; attempt++) {
    try {
      const fd = io.openSync(file, 'wx')
      const pid = Buffer.from(String(process.pid))
      try {
        io.writeAllSync(fd, pid, 0, pid.length, 0)
        io.fsyncSync(fd)
      } finally {
        io.closeSync(fd)
      }
      fsyncDir(real)
      break
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 2) throw err
    }
    let held = ''
    try {
      held = io.readFileSync(file).toString('utf8').trim()
    } catch {
      continue // removed meanwhile: try again
    }
    const pid = Number(held)
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) {
      throw new EngineError('LOCKED', `${dir} is in use by process ${pid} (see ${file})`)
    }
    // Stale (its process is gone, or the file is empty from a crash while writing it).
    io.rmSync(file)
  }
  openHere.add(real)
  return () => {
    openHere.delete(real)
    try {
      if (io.readFileSync(file).toString('utf8').trim() === String(process.pid)) io.rmSync(file)
    } catch {}
  }
}
