// The engine's one door to the file system. Every open, read, write, sync, truncate, rename
// and unlink of the engine goes through `io`, so a test can make the Nth call of a kind fail
// with the errno a real disk gives (ENOSPC, EIO, EROFS, EMFILE), in the manner of LevelDB's
// fault_injection_test and RocksDB's FaultInjectionTestFS, without faking anything else.
// Files are created with mode 0600 and directories 0700: a data directory holds every
// tenant's data, and no other local user may read it, whatever the umask.
import fs from 'node:fs'

/**
 * The most one call off the event loop reads or writes. The kernel copies it in the calling
 * thread, which on a server given one core takes the core from requests meanwhile; 256 KiB
 * is a tenth of a millisecond or so.
 */
export const IO_PIECE = 256 * 1024

export type IoOp =
  | 'open'
  | 'read'
  | 'write'
  | 'fsync'
  | 'truncate'
  | 'rename'
  | 'unlink'
  | 'mkdir'
  | 'readdir'
  /** Zero-filling the space ahead of the log, and cutting what is left of it at a seal. */
  | 'prealloc'

export interface Fault {
  op: IoOp
  /** The errno to fail with, e.g. 'ENOSPC'. */
  code: string
  /** Fail from the Nth matching call on (1 = the next one). */
  nth?: number
  /** How many calls fail, once failing starts; Infinity until cleared. */
  times?: number
  /** Only calls on paths this matches (fd calls are matched on the path they were opened with). */
  path?: RegExp
}

interface Armed extends Fault {
  seen: number
  failed: number
}

let armed: Armed[] = []
const fdPaths = new Map<number, string>()

/** Makes matching calls fail (tests only). */
export function injectFault(f: Fault): void {
  armed.push({ ...f, seen: 0, failed: 0 })
}

/** Lets every call through again. */
export function clearFaults(): void {
  armed = []
}

function check(op: IoOp, target: string | number): void {
  if (armed.length === 0) return
  const p = typeof target === 'number' ? (fdPaths.get(target) ?? '') : target
  for (const f of armed) {
    if (f.op !== op || (f.path && !f.path.test(p))) continue
    f.seen++
    if (f.seen < (f.nth ?? 1) || f.failed >= (f.times ?? 1)) continue
    f.failed++
    const err = new Error(`${f.code}: ${op} failed (injected) on ${p}`) as NodeJS.ErrnoException
    err.code = f.code
    err.syscall = op
    throw err
  }
}

const ZEROS = 1024 * 1024
let zeros: Buffer | undefined

/** fs.write and fs.fdatasync as promises, for the calls below that have checked the fault. */
const pwrite = (fd: number, buf: Uint8Array, off: number, len: number, pos: number) =>
  new Promise<number>((resolve, reject) =>
    fs.write(fd, buf, off, len, pos, (e, n) => (e ? reject(e) : resolve(n))),
  )
const datasync = (fd: number) =>
  new Promise<void>((resolve, reject) => fs.fdatasync(fd, (e) => (e ? reject(e) : resolve())))

export const FILE_MODE = 0o600
export const DIR_MODE = 0o700

export const io = {
  openSync(file: string, flags: string): number {
    check('open', file)
    const fd = fs.openSync(file, flags, FILE_MODE)
    fdPaths.set(fd, file)
    return fd
  },
  /** A directory opened for fsync. */
  openDirSync(dir: string): number {
    check('open', dir)
    const fd = fs.openSync(dir, 'r')
    fdPaths.set(fd, dir)
    return fd
  },
  closeSync(fd: number): void {
    fdPaths.delete(fd)
    fs.closeSync(fd)
  },
  readSync(fd: number, buf: Buffer, off: number, len: number, pos: number): number {
    check('read', fd)
    return fs.readSync(fd, buf, off, len, pos)
  },
  read(fd: number, buf: Buffer, off: number, len: number, pos: number): Promise<number> {
    try {
      check('read', fd)
    } catch (err) {
      return Promise.reject(err)
    }
    return new Promise((resolve, reject) =>
      fs.read(fd, buf, off, len, pos, (err, n) => (err ? reject(err) : resolve(n))),
    )
  },
  writeSync(fd: number, buf: Uint8Array, off: number, len: number, pos: number): number {
    check('write', fd)
    return fs.writeSync(fd, buf, off, len, pos)
  },
  write(fd: number, buf: Uint8Array, off: number, len: number, pos: number): Promise<number> {
    try {
      check('write', fd)
    } catch (err) {
      return Promise.reject(err)
    }
    return pwrite(fd, buf, off, len, pos)
  },
  /**
   * Writes all of buf at pos, off the event loop, at most IO_PIECE bytes a call: the pool
   * thread that copies them into the page cache shares the event loop's core, and a hint or
   * checkpoint of tens of MiB written in one call kept it for as many milliseconds.
   */
  async writeAll(
    fd: number,
    buf: Uint8Array,
    off: number,
    len: number,
    pos: number,
  ): Promise<void> {
    let done = 0
    while (done < len)
      done += await io.write(fd, buf, off + done, Math.min(len - done, IO_PIECE), pos + done)
  },
  /** Writes all of buf at pos. */
  writeAllSync(fd: number, buf: Uint8Array, off: number, len: number, pos: number): void {
    let done = 0
    while (done < len) done += io.writeSync(fd, buf, off + done, len - done, pos + done)
  },
  fsyncSync(fd: number): void {
    check('fsync', fd)
    fs.fsyncSync(fd)
  },
  fdatasync(fd: number): Promise<void> {
    try {
      check('fsync', fd)
    } catch (err) {
      return Promise.reject(err)
    }
    return datasync(fd)
  },
  fsync(fd: number): Promise<void> {
    try {
      check('fsync', fd)
    } catch (err) {
      return Promise.reject(err)
    }
    return new Promise((resolve, reject) => fs.fsync(fd, (e) => (e ? reject(e) : resolve())))
  },
  /** Writes zeros over [from, to) of a file and syncs it, off the event loop. */
  async zeroFill(file: string, from: number, to: number): Promise<void> {
    check('prealloc', file)
    zeros ??= Buffer.alloc(ZEROS)
    // Through a descriptor of its own: Linux reports a failed write-back once to each open
    // file, and this sync also writes back the log's pages. On the log's descriptor it could
    // take the report of their failure, and the log's own fdatasync would then succeed.
    const fd = fs.openSync(file, 'r+')
    try {
      for (let at = from; at < to; ) at += await pwrite(fd, zeros, 0, Math.min(ZEROS, to - at), at)
      await datasync(fd)
    } finally {
      fs.closeSync(fd)
    }
  },
  /** Cuts a file back to `len`: the zero-filled space past a sealed segment's end. */
  trimSync(fd: number, len: number): void {
    check('prealloc', fd)
    fs.ftruncateSync(fd, len)
  },
  ftruncateSync(fd: number, len: number): void {
    check('truncate', fd)
    fs.ftruncateSync(fd, len)
  },
  /** Cuts a closed file to `len` bytes, durably. */
  truncateFileSync(file: string, len: number): void {
    const fd = io.openSync(file, 'r+')
    try {
      io.ftruncateSync(fd, len)
      io.fsyncSync(fd)
    } finally {
      io.closeSync(fd)
    }
  },
  renameSync(from: string, to: string): void {
    check('rename', to)
    fs.renameSync(from, to)
  },
  rmSync(file: string): void {
    check('unlink', file)
    fs.rmSync(file, { force: true })
  },
  rm(file: string): Promise<void> {
    try {
      check('unlink', file)
    } catch (err) {
      return Promise.reject(err)
    }
    return fs.promises.rm(file, { force: true })
  },
  mkdirSync(dir: string): void {
    check('mkdir', dir)
    fs.mkdirSync(dir, { recursive: true, mode: DIR_MODE })
  },
  readdirSync(dir: string): string[] {
    check('readdir', dir)
    return fs.readdirSync(dir)
  },
  readFileSync(file: string): Buffer {
    check('read', file)
    return fs.readFileSync(file)
  },
  /** Whole-file write, made durable, under a temporary name then renamed into place. */
  writeFileAtomicSync(file: string, bytes: Uint8Array): void {
    const tmp = `${file}.tmp`
    const fd = io.openSync(tmp, 'w')
    try {
      io.writeAllSync(fd, bytes, 0, bytes.length, 0)
      io.fsyncSync(fd)
    } finally {
      io.closeSync(fd)
    }
    io.renameSync(tmp, file)
  },
  /**
   * The same, with the bytes written and synced off the event loop; `beforeRename` may throw
   * to leave the file unnamed (the directory is no longer this process's).
   */
  async writeFileAtomic(file: string, bytes: Uint8Array, beforeRename?: () => void): Promise<void> {
    const tmp = `${file}.tmp`
    const fd = io.openSync(tmp, 'w')
    try {
      await io.writeAll(fd, bytes, 0, bytes.length, 0)
      await io.fsync(fd)
    } finally {
      io.closeSync(fd)
    }
    beforeRename?.()
    io.renameSync(tmp, file)
  },
  existsSync(file: string): boolean {
    return fs.existsSync(file)
  },
  sizeOf(file: string): number {
    return fs.statSync(file).size
  },
  /** Makes a directory and what it holds private (0700, files 0600), whatever they were. */
  makePrivate(dir: string): void {
    fs.chmodSync(dir, DIR_MODE)
    for (const name of fs.readdirSync(dir)) {
      const p = `${dir}/${name}`
      // A file gone since the listing is no file to mend: another process opening the
      // directory at the same moment takes a stale LOCK over (remove, then create), and
      // failing here failed that open with IO_ERROR instead of LOCKED (test/engine/lock.test.ts).
      try {
        const st = fs.lstatSync(p)
        if (st.isFile() && (st.mode & 0o777) !== FILE_MODE) fs.chmodSync(p, FILE_MODE)
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
      }
    }
  },
}

/** Makes a directory's entries (new, renamed or removed files) durable. */
export function fsyncDir(dir: string): void {
  const fd = io.openDirSync(dir)
  try {
    io.fsyncSync(fd)
  } finally {
    io.closeSync(fd)
  }
}

/** fsyncDir, off the event loop: for work done while requests are served (commits, compaction). */
export async function fsyncDirAsync(dir: string): Promise<void> {
  const fd = io.openDirSync(dir)
  try {
    await io.fsync(fd)
  } finally {
    io.closeSync(fd)
  }
}

/** The errno of a failed call, if it has one. */
export function errnoOf(err: unknown): string | undefined {
  const code = (err as NodeJS.ErrnoException | null)?.code
  return typeof code === 'string' && code.startsWith('E') ? code : undefined
}
