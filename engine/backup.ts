// A backup: a copy of an open database's directory that opens as it was when it was taken.
import path from 'node:path'
import { LEGACY_HISTORY } from './history-file.js'
import { fsyncDir, io } from './io.js'
import { type NamespaceTable, writeNamespaces } from './namespaces-file.js'
import { HISTORY_NAME, type Segment, hintFile } from './parts.js'
import { WINDOWS_FILE, WINDOW_NAME } from './window-file.js'

/**
 * Copies the files of a database whose writes are all on disk to `toDir`, in one
 * synchronous step, so no write or compaction swap happens half-way: every segment up to
 * what is written, the hints of sealed ones, the history files (so that a copy resumes
 * watches too) and the namespace table.
 */
export function copyDatabase(
  dir: string,
  segments: Iterable<Segment>,
  table: NamespaceTable,
  toDir: string,
): void {
  io.mkdirSync(toDir)
  const copy = (from: string, name: string, bytes: number) => {
    const src = io.openSync(from, 'r')
    const dst = io.openSync(path.join(toDir, name), 'w')
    try {
      const buf = Buffer.allocUnsafe(1024 * 1024)
      for (let off = 0; off < bytes; ) {
        const n = io.readSync(src, buf, 0, Math.min(buf.length, bytes - off), off)
        if (n === 0) break
        io.writeAllSync(dst, buf, 0, n, off)
        off += n
      }
      io.fsyncSync(dst)
    } finally {
      io.closeSync(src)
      io.closeSync(dst)
    }
  }
  for (const seg of segments) {
    copy(seg.file, path.basename(seg.file), seg.written)
    const hint = path.join(dir, hintFile(seg.id))
    if (!seg.hint && io.existsSync(hint)) copy(hint, hintFile(seg.id), io.sizeOf(hint))
  }
  for (const name of io.readdirSync(dir))
    if (
      HISTORY_NAME.test(name) ||
      name === LEGACY_HISTORY ||
      WINDOW_NAME.test(name) ||
      name === WINDOWS_FILE
    )
      copy(path.join(dir, name), name, io.sizeOf(path.join(dir, name)))
  writeNamespaces(toDir, table)
  fsyncDir(toDir)
}
