// One process per directory. The LOCK file is created exclusively (O_EXCL) and names its
// owner, so of two processes starting together only one gets it. A LOCK whose owner no
// longer runs (it was killed) is stale and taken over, by one process at a time
// (LOCK.takeover, also created exclusively). Within one process a set of open directories
// catches a second open, since the pid would be our own.
//
// The owner is named by its pid, its start time and the boot it started in, where the
// system says them (Linux's /proc): a pid alone is reused, after a reboot or in a new
// container, by processes that have nothing to do with us, and a LOCK naming one of those
// would keep the database shut until someone removed it by hand.
import fs from 'node:fs'
import path from 'node:path'
import { EngineError } from './errors.js'
import { fsyncDir, io } from './io.js'

const openHere = new Set<string>()

/** Who holds a lock file: a pid and, when it was written where /proc is, when and in which boot it started. */
interface Owner {
  pid: number
  start?: string
  boot?: string
}

function readText(file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8').trim()
  } catch {
    return undefined
  }
}

/** The boot this system is in (Linux), or undefined. */
const bootId = readText('/proc/sys/kernel/random/boot_id')

/** When process `pid` started, in clock ticks since boot (field 22 of /proc/PID/stat), or undefined. */
function startOf(pid: number): string | undefined {
  const stat = readText(`/proc/${pid}/stat`)
  if (stat === undefined) return undefined
  // The command name (field 2) is in parentheses and may hold spaces and parentheses itself.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return fields[19]
}

/** Our own name in a lock file: `pid`, or `pid start boot` where /proc tells them. */
function ownName(): string {
  const start = startOf(process.pid)
  return start !== undefined && bootId !== undefined
    ? `${process.pid} ${start} ${bootId}`
    : String(process.pid)
}

function pidRuns(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** Whether the process a lock file names still runs (and is not us). */
function runs(owner: Owner): boolean {
  if (owner.pid === 0 || owner.pid === process.pid) return false
  if (owner.boot !== undefined && bootId !== undefined && owner.boot !== bootId) return false
  if (owner.start !== undefined) {
    const now = startOf(owner.pid)
    // No /proc entry where the file was written with one: the process is gone, unless this
    // system has no /proc to look in.
    if (now !== undefined) return now === owner.start
    if (bootId !== undefined) return false
  }
  return pidRuns(owner.pid)
}

/** A takeover file this old, whose process is gone, was left by a crash mid-takeover. */
const TAKEOVER_STALE_MS = 10_000

/** Creates `file` exclusively holding our pid; false when it exists. */
function createHolding(file: string, dir: string): boolean {
  let fd: number
  try {
    fd = io.openSync(file, 'wx')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false
    throw err
  }
  const name = Buffer.from(ownName())
  try {
    io.writeAllSync(fd, name, 0, name.length, 0)
    io.fsyncSync(fd)
  } finally {
    io.closeSync(fd)
  }
  fsyncDir(dir)
  return true
}

/**
 * Who a lock file names (pid 0 when it names nobody: empty from a crash while writing it),
 * or undefined when it is gone. A file holding only a pid is from before start times were
 * written, and is judged by its pid alone.
 */
function holder(file: string): (Owner & { text: string }) | undefined {
  let text: string
  try {
    text = io.readFileSync(file).toString('utf8').trim()
  } catch {
    return undefined // removed meanwhile
  }
  const [p, start, boot] = text.split(' ')
  const pid = Number(p)
  if (!Number.isInteger(pid) || pid <= 0) return { pid: 0, text }
  return { pid, start, boot, text }
}

/** The pid of another running process holding `dir`, or undefined when none does. */
export function lockHolder(dir: string): number | undefined {
  const owner = holder(path.join(dir, 'LOCK'))
  return owner !== undefined && runs(owner) ? owner.pid : undefined
}

export function acquireLock(dir: string): () => void {
  const real = fs.realpathSync(dir)
  if (openHere.has(real)) {
    throw new EngineError('LOCKED', `${dir} is already open in this process`)
  }
  const file = path.join(real, 'LOCK')
  const takeover = path.join(real, 'LOCK.takeover')
  const inUse = (pid: number) =>
    new EngineError('LOCKED', `${dir} is in use by process ${pid} (see ${file})`)
  for (let attempt = 0; ; attempt++) {
    if (attempt > 3) throw new EngineError('LOCKED', `${dir} could not be locked (see ${file})`)
    if (createHolding(file, real)) break
    const owner = holder(file)
    if (owner === undefined) continue // removed meanwhile: try again
    if (runs(owner)) throw inUse(owner.pid)
    // Stale: its process is gone. Taking it over is remove-then-create, and two processes
    // that both saw it stale must not both do that (the second would remove the lock the
    // first just made), so the one that creates LOCK.takeover does it, and the other waits
    // its turn or finds the lock held.
    if (!createHolding(takeover, real)) {
      const other = holder(takeover)
      if (other !== undefined && runs(other))
        throw new EngineError('LOCKED', `${dir} is being opened by process ${other.pid}`)
      let age = 0
      try {
        age = Date.now() - fs.statSync(takeover).mtimeMs
      } catch {}
      if (age > TAKEOVER_STALE_MS) io.rmSync(takeover)
      else if (other !== undefined) {
        // Its process is gone, moments ago: wait, rather than race another remover.
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50)
      }
      continue
    }
    try {
      // Still the stale holder (or gone): ours to replace. Anything else won meanwhile.
      const now = holder(file)
      if (now === undefined || now.text === owner.text) {
        io.rmSync(file)
        if (createHolding(file, real)) break
      }
    } finally {
      io.rmSync(takeover)
    }
  }
  openHere.add(real)
  const mine = ownName()
  return () => {
    openHere.delete(real)
    try {
      if (io.readFileSync(file).toString('utf8').trim() === mine) io.rmSync(file)
    } catch {}
  }
}
