// HISTORY: the recent changes compaction takes out of the log. The log is the history of
// what happened (history.ts reads it back after a restart), but a pass drops overwritten
// and deleted entries, and the entries it copies land in its output among older data, where
// they no longer read as what happened. So each pass first keeps, from the segments it
// rewrites, every entry still within its namespace's window (its last KEEP_CHANGES changes,
// KEEP_BYTES at most), with what the file already held and is still within the window, and
// writes them here before the pass can delete a segment (FORMAT.md, "HISTORY").
import path from 'node:path'
import type { DbCore } from './db-core.js'
import { fsyncDirAsync, io } from './io.js'
import { ENTRY_HEADER, REC_HEADER, SEG_HEADER, checkRecord, sealRecord } from './record.js'

export const HISTORY_FILE = 'HISTORY'
/** Each namespace's window: its last 10,000 changes... */
export const KEEP_CHANGES = 10_000
/** ...or fewer, where they come to more than 64 MiB of entries. */
export const KEEP_BYTES = 64 * 1024 * 1024
/** The file's first bytes; the rest of its 32-byte header is zeros. */
const MAGIC = Buffer.from('CAIRNHST')

/** One namespace's entries kept so far, by version. */
type Kept = Map<number, Buffer>

export class HistoryKeep {
  private byNs = new Map<number, Kept>()

  constructor(private readonly db: DbCore) {}

  /** Whether an entry of namespace nsId at `version` is within its namespace's window. */
  private wanted(nsId: number, version: number): boolean {
    const n = this.db.keydir.byId.get(nsId)
    return n !== undefined && version > n.version - KEEP_CHANGES
  }

  /** Keeps a copy of each entry of the record at buf[at] that is within its window. */
  takeRecord(buf: Buffer, at: number, count: number): void {
    let q = at + REC_HEADER
    for (let i = 0; i < count; i++) {
      const len = ENTRY_HEADER + buf.readUInt16LE(q + 6) + buf.readUInt32LE(q + 28)
      const nsId = buf.readUInt32LE(q + 8)
      const version = buf.readDoubleLE(q + 12)
      if (this.wanted(nsId, version)) {
        let kept = this.byNs.get(nsId)
        if (!kept) {
          kept = new Map()
          this.byNs.set(nsId, kept)
        }
        kept.set(version, Buffer.from(buf.subarray(q, q + len)))
      }
      q += len
    }
  }

  /** Takes in what the file holds now (a damaged or missing file gives what it can). */
  async load(): Promise<void> {
    const text = await readHistory(this.db.dir)
    forEachRecord(text, (at, count) => this.takeRecord(text, at, count))
  }

  /**
   * Writes the kept entries, newest first per namespace up to its window, as the new file:
   * durable under its temporary name, then renamed. The caller fsyncs the directory.
   */
  async write(): Promise<void> {
    const parts: Buffer[] = [Buffer.concat([MAGIC, Buffer.alloc(SEG_HEADER - MAGIC.length)])]
    for (const kept of this.byNs.values()) {
      const versions = [...kept.keys()].sort((a, b) => b - a)
      let bytes = 0
      for (let i = 0; i < versions.length && i < KEEP_CHANGES; i++) {
        const entry = kept.get(versions[i]!)!
        bytes += entry.length
        if (bytes > KEEP_BYTES && i > 0) break
        const head = Buffer.alloc(REC_HEADER)
        sealRecord(head, 0, entry.length, 1)
        parts.push(head, entry)
      }
    }
    const body = Buffer.concat(parts)
    const file = path.join(this.db.dir, HISTORY_FILE)
    const tmp = `${file}.tmp`
    const fd = io.openSync(tmp, 'w')
    try {
      let off = 0
      while (off < body.length) off += await io.write(fd, body, off, body.length - off, off)
      await io.fdatasync(fd)
    } finally {
      io.closeSync(fd)
    }
    io.renameSync(tmp, file)
  }
}

/** The file's bytes, or an empty history when there is none or it cannot be read. */
export async function readHistory(dir: string): Promise<Buffer> {
  const file = path.join(dir, HISTORY_FILE)
  try {
    if (!io.existsSync(file)) return Buffer.alloc(0)
    const text = io.readFileSync(file)
    return text.subarray(0, MAGIC.length).equals(MAGIC) ? text : Buffer.alloc(0)
  } catch {
    return Buffer.alloc(0)
  }
}

/** Calls `each` with every whole, intact record after the header; stops at the first that is not. */
export function forEachRecord(buf: Buffer, each: (at: number, count: number) => void): void {
  for (let p = SEG_HEADER; p + REC_HEADER <= buf.length; ) {
    const len = checkRecord(buf, p, buf.length)
    if (len <= 0) return
    each(p, buf.readUInt32LE(p + 8))
    p += len
  }
}

/** Writes `keep` as the new HISTORY, then makes the rename durable; never throws. */
export async function writeHistory(keep: HistoryKeep, dir: string): Promise<boolean> {
  try {
    await keep.write()
    await fsyncDirAsync(dir)
    return true
  } catch {
    try {
      io.rmSync(path.join(dir, `${HISTORY_FILE}.tmp`))
    } catch {}
    return false
  }
}
