// A small real file system of its own for a test: a tmpfs mounted on a fresh directory, so a
// test can fill it up (ENOSPC) or remount it read-only (EROFS) with the kernel's own errors.
// Needs root; where mounting is not allowed, `mountTmpfs` answers why and the test skips.
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

export interface Tmpfs {
  dir: string
  /** Fills all but `leaveBytes` of the free space with a file; returns its path. */
  fill(leaveBytes: number): string
  remount(mode: 'ro' | 'rw'): void
  unmount(): void
}

/** Mounts a tmpfs of `sizeBytes`, or returns the reason it cannot. */
export function mountTmpfs(sizeBytes: number): Tmpfs | string {
  if (process.platform !== 'linux') return 'tmpfs mounts need Linux'
  if (process.getuid?.() !== 0) return 'mounting a tmpfs needs root'
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-tmpfs-'))
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeBytes}`, 'tmpfs', dir], {
      stdio: 'pipe',
    })
  } catch (err) {
    fs.rmdirSync(dir)
    return `cannot mount a tmpfs here: ${String((err as { stderr?: Buffer }).stderr ?? err).trim()}`
  }
  let mounted = true
  return {
    dir,
    fill(leaveBytes) {
      const free = fs.statfsSync(dir).bavail * fs.statfsSync(dir).bsize
      const file = path.join(dir, `filler-${Date.now()}`)
      const target = Math.max(0, free - leaveBytes)
      const chunk = Buffer.alloc(64 * 1024)
      const fd = fs.openSync(file, 'w')
      let size = 0
      try {
        while (size < target)
          size += fs.writeSync(fd, chunk, 0, Math.min(chunk.length, target - size))
      } catch (err) {
        // A server on this file system wrote meanwhile (a segment, a checkpoint), so the space
        // ran out first: it is full now, and giving back leaveBytes leaves exactly that free.
        if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err
        fs.ftruncateSync(fd, Math.max(0, size - leaveBytes))
      } finally {
        fs.closeSync(fd)
      }
      return file
    },
    remount(mode) {
      execFileSync('mount', ['-o', `remount,${mode}`, dir], { stdio: 'pipe' })
    },
    unmount() {
      if (!mounted) return
      mounted = false
      execFileSync('umount', ['-l', dir], { stdio: 'pipe' })
      fs.rmSync(dir, { recursive: true, force: true })
    },
  }
}
