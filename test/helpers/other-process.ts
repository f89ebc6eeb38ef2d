// A live process that is not ours to name in a LOCK or server.json: what a pid left in one
// often belongs to after a reboot or in a new container. Linux only (it needs /proc).
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import fs from 'node:fs'

const BOOT_FILE = '/proc/sys/kernel/random/boot_id'

export interface OtherProcess {
  proc: ChildProcess
  pid: number
  /** Its start time as the lock names it (field 22 of /proc/PID/stat). */
  start: string
  /** This boot's id. */
  boot: string
}

/** Starts `sleep 60`, killed at teardown; a string saying why not where there is no /proc. */
export async function otherProcess(t: {
  teardown(fn: () => unknown): void
}): Promise<OtherProcess | string> {
  if (!fs.existsSync(BOOT_FILE)) return 'no /proc here: a LOCK names a pid only'
  const proc = spawn('sleep', ['60'], { stdio: 'ignore' })
  t.teardown(() => proc.kill('SIGKILL'))
  await once(proc, 'spawn')
  const pid = proc.pid!
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
  const start = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]!
  return { proc, pid, start, boot: fs.readFileSync(BOOT_FILE, 'utf8').trim() }
}
