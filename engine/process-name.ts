// How a process is named in a file another process reads (the engine's LOCK, a server's
// server.json): its pid, its start time and the boot it started in, where the system says
// them (Linux's /proc). A pid alone is reused, after a reboot or in a new container, by
// processes that have nothing to do with the one that wrote it.
import fs from 'node:fs'

/** A named process: its pid and, when named where /proc is, when and in which boot it started. */
export interface Owner {
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

/** The fields of /proc/PID/stat from the third (the state) on, or undefined. */
function statOf(pid: number): string[] | undefined {
  const stat = readText(`/proc/${pid}/stat`)
  if (stat === undefined) return undefined
  // The command name (field 2) is in parentheses and may hold spaces and parentheses itself.
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')
}

/** When process `pid` started, in clock ticks since boot (field 22 of /proc/PID/stat), or undefined. */
function startOf(pid: number): string | undefined {
  return statOf(pid)?.[19]
}

/** This process's name: `pid start boot`, or `pid` alone where there is no /proc. */
export function ownName(): string {
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

/** Whether the named process still runs (and is not this one). */
export function runs(owner: Owner): boolean {
  if (owner.pid === 0 || owner.pid === process.pid) return false
  if (owner.boot !== undefined && bootId !== undefined && owner.boot !== bootId) return false
  const stat = statOf(owner.pid)
  // A zombie (Z) or dead (X) process was killed and only waits for its parent to reap it: a
  // supervisor that restarts at once must not find its own killed server holding on.
  if (stat !== undefined && (stat[0] === 'Z' || stat[0] === 'X')) return false
  if (owner.start !== undefined && stat !== undefined) return stat[19] === owner.start
  // No start time to compare: this system has no /proc, or hides other users' processes in
  // it (hidepid, ProtectProc), or the pid is gone. The pid alone then decides, which errs
  // towards a live holder: a reused pid of another user's only keeps the directory shut.
  return pidRuns(owner.pid)
}

/**
 * Reads a name written by ownName. Pid 0 when it names nobody (empty, from a crash while
 * writing it). A name holding only a pid is from before start times were written, or from a
 * system without /proc, and is judged by its pid alone.
 */
export function parseName(text: string): Owner {
  const [p, start, boot] = text.trim().split(' ')
  const pid = Number(p)
  if (!Number.isInteger(pid) || pid <= 0) return { pid: 0 }
  return { pid, start, boot }
}

/** Whether the process a name (from ownName) stands for still runs, and is not this one. */
export function nameRuns(text: string): boolean {
  return runs(parseName(text))
}
