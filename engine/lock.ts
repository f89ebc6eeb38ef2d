// One process per directory. The LOCK file is created exclusively (O_EXCL) and names its
// owner, so of two processes starting together only one gets it. A LOCK whose owner no
// longer runs (it was killed) is stale and taken over, by one process at a time
// (LOCK.takeover, also created exclusively). Within one process a set of open directories
// catches a second open, since the pid would be our own.
//
// The owner is named by its pid, its start time and the boot it started in (process-name.ts):
// a pid alone is reused, after a reboot or in a new container, by processes that have
// nothing to do with us, and a LOCK naming one of those would keep the database shut until
// someone removed it by hand.
import fs from 'node:fs'
import path from 'node:path'
import { EngineError } from './errors.js'
import { fsyncDir, io } from './io.js'
import { type Owner, ownName, parseName, runs } from './process-name.js'

const openHere = new Set<string>()

/** How old `file` is, in ms (0 when it cannot be told: gone meanwhile). */
function ageOf(file: string): number {
  try {
    return Date.now() - fs.statSync(file).mtimeMs
  } catch {
    return 0
  }
}

/** Blocks for `ms`: only while opening, between tries of a lock another process is taking. */
function pause(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)
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

/** Who a lock file names, or undefined when it is gone (see parseName). */
function holder(file: string): (Owner & { text: string }) | undefined {
  let text: string
  try {
    text = io.readFileSync(file).toString('utf8').trim()
  } catch {
    return undefined // removed meanwhile
  }
  return { ...parseName(text), text }
}

/** A held lock: `release` lets it go; `check` says whether LOCK still names this process. */
export interface HeldLock {
  release(): void
  /**
   * Whether the directory is still ours. A LOCK removed meanwhile (by hand, or a clean-up
   * script) is made again, so that a second process started later finds it held; a LOCK that
   * names another process means one took the directory while this one had it: the caller
   * must stop writing. Undefined while ours, else why not.
   */
  check(): string | undefined
}

export function acquireLock(dir: string): HeldLock {
  const real = fs.realpathSync(dir)
  if (openHere.has(real)) {
    throw new EngineError('LOCKED', `${dir} is already open in this process`)
  }
  const file = path.join(real, 'LOCK')
  const takeover = path.join(real, 'LOCK.takeover')
  const inUse = (pid: number) =>
    new EngineError('LOCKED', `${dir} is in use by process ${pid} (see ${file})`)
  let young = 0
  for (let attempt = 0; ; attempt++) {
    if (attempt > 3) throw new EngineError('LOCKED', `${dir} could not be locked (see ${file})`)
    if (createHolding(file, real)) break
    const owner = holder(file)
    if (owner === undefined) continue // removed meanwhile: try again
    if (runs(owner)) throw inUse(owner.pid)
    // Empty and new: another process between creating it and writing its name, not a crash
    // while writing it. Wait for the name (or for the file to age into a crash's leftover).
    if (owner.pid === 0 && ageOf(file) < TAKEOVER_STALE_MS && young++ < 1000) {
      pause(10)
      attempt--
      continue
    }
    // Stale: its process is gone. Taking it over is remove-then-create, and two processes
    // that both saw it stale must not both do that (the second would remove the lock the
    // first just made), so the one that creates LOCK.takeover does it, and the other waits
    // its turn or finds the lock held.
    if (!createHolding(takeover, real)) {
      const other = holder(takeover)
      if (other !== undefined && runs(other))
        throw new EngineError('LOCKED', `${dir} is being opened by process ${other.pid}`)
      if (ageOf(takeover) > TAKEOVER_STALE_MS) io.rmSync(takeover)
      else if (other !== undefined) {
        // Its process is gone, moments ago: wait, rather than race another remover.
        pause(50)
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
  const lost = (by: string) =>
    `${file} now names ${by}: another process took this directory, so this one stops writing to it`
  return {
    release() {
      openHere.delete(real)
      try {
        if (holder(file)?.text === mine) io.rmSync(file)
      } catch {}
    },
    check() {
      let owner = holder(file)
      if (owner?.pid === 0) {
        // Empty: left by a remake of it that the disk refused. Made again, as if missing.
        try {
          io.rmSync(file)
        } catch {}
        owner = undefined
      }
      if (owner === undefined) {
        try {
          if (createHolding(file, real)) return undefined
        } catch {
          return undefined // a disk that refuses: the log meets that itself
        }
        owner = holder(file)
        if (owner === undefined) return undefined
      }
      return owner.text === mine ? undefined : lost(`process ${owner.pid}`)
    },
  }
}
