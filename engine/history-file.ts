// HISTORY: the recent changes compaction takes out of the log. The log is the history of
// what happened (history.ts reads it back after a restart), but a pass drops overwritten
// and deleted entries, and the entries it copies land in its output among older data, where
// they no longer read as what happened. So each pass first keeps, from the segments it
// rewrites, every entry still within its namespace's window (its last KEEP_CHANGES changes,
// KEEP_BYTES at most), with what the file already held and is still within the window, and
// writes them here before the pass can delete a segment (FORMAT.md, "HISTORY").
import path from 'node:path'
import type { DbCore } from './db-core.js'
import { IO_PIECE, fsyncDirAsync, io } from './io.js'
import { ENTRY_HEADER, REC_HEADER, SEG_HEADER, checkRecord, sealRecord } from './record.js'

export const HISTORY_FILE = 'HISTORY'
/** Each namespace's window: its last 10,000 changes... */
export const KEEP_CHANGES = 10_000
/** ...or fewer, where they come to more than 64 MiB of entries. */
export const KEEP_BYTES = 64 * 1024 * 1024
/**
 * The whole file's bound: past it, the namespaces with most keep their newest changes up to
 * an equal share, so the file costs a pass, the disk and a reader a bounded amount however
 * many namespaces are busy.
 */
export const KEEP_TOTAL = 64 * 1024 * 1024
/** The file's first bytes; the rest of its 32-byte header is zeros. */
const MAGIC = Buffer.from('CAIRNHST')

/** One namespace's entries kept so far, by version, and their bytes. */
interface Kept {
  entries: Map<number, Buffer>
  bytes: number
}

export class HistoryKeep {
  private byNs = new Map<number, Kept>()
  private total = 0

  constructor(private readonly db: DbCore) {}

  /** Keeps a copy of each entry of the record at buf[at] that is within its window. */
  takeRecord(buf: Buffer, at: number, count: number): void {
    let q = at + REC_HEADER
    for (let i = 0; i < count; i++) {
      const len = ENTRY_HEADER + buf.readUInt16LE(q + 6) + buf.readUInt32LE(q + 28)
      const nsId = buf.readUInt32LE(q + 8)
      const version = buf.readDoubleLE(q + 12)
      const n = this.db.keydir.byId.get(nsId)
      if (n !== undefined && version > n.version - KEEP_CHANGES) {
        let kept = this.byNs.get(nsId)
        if (!kept) {
          kept = { entries: new Map(), bytes: 0 }
          this.byNs.set(nsId, kept)
        }
        const was = kept.entries.get(version)
        if (was === undefined) {
          kept.entries.set(version, Buffer.from(buf.subarray(q, q + len)))
          kept.bytes += len
          this.total += len
        }
        // Entries come oldest first, as a rule: the oldest go as soon as a bound is passed,
        // so a pass holds little more than it writes.
        if (kept.bytes > KEEP_BYTES * 1.25) this.trim(kept, KEEP_BYTES)
        if (this.total > KEEP_TOTAL * 2) this.fit(KEEP_TOTAL)
      }
      q += len
    }
  }

  /**
   * Drops a namespace's oldest entries until it holds at most `bytes` (or one entry) and at
   * most `count` entries.
   */
  private trim(kept: Kept, bytes: number, count = Number.POSITIVE_INFINITY): void {
    const versions = [...kept.entries.keys()].sort((a, b) => a - b)
    for (
      let i = 0;
      (kept.bytes > bytes || kept.entries.size > count) && i < versions.length - 1;
      i++
    ) {
      const len = kept.entries.get(versions[i]!)!.length
      kept.entries.delete(versions[i]!)
      kept.bytes -= len
      this.total -= len
    }
  }

  /**
   * Brings the total under `bound`: a share that the namespaces under it leave to the others
   * (water-filling), each of the rest trimmed to it.
   */
  private fit(bound: number): void {
    if (this.total <= bound) return
    const sizes = [...this.byNs.values()].sort((a, b) => a.bytes - b.bytes)
    let left = bound
    for (let i = 0; i < sizes.length; i++) {
      const share = left / (sizes.length - i)
      if (sizes[i]!.bytes <= share) {
        left -= sizes[i]!.bytes
        continue
      }
      for (let j = i; j < sizes.length; j++) this.trim(sizes[j]!, share)
      return
    }
  }

  /**
   * Takes in what the file holds now. @throws when it cannot be read (see readHistory): the
   * pass then fails, as one that went on would write over what the file holds.
   */
  async load(): Promise<void> {
    const text = await readHistory(this.db.dir)
    forEachRecord(text, (at, count) => this.takeRecord(text, at, count))
  }

  /**
   * Writes the kept entries, newest first per namespace up to its window and the total's
   * bound, as the new file: durable under its temporary name, then renamed once `mayRename`
   * allows (it throws when the directory is no longer this process's).
   */
  async write(mayRename: () => void): Promise<void> {
    // The newest KEEP_CHANGES of each namespace (its window moved on since some came in).
    for (const kept of this.byNs.values()) this.trim(kept, KEEP_BYTES, KEEP_CHANGES)
    this.fit(KEEP_TOTAL)
    let size = SEG_HEADER
    for (const kept of this.byNs.values()) size += kept.bytes + kept.entries.size * REC_HEADER
    const body = Buffer.alloc(size)
    MAGIC.copy(body, 0)
    let o = SEG_HEADER
    for (const kept of this.byNs.values())
      for (const entry of kept.entries.values()) {
        sealRecord(body, o, entry.length, 1)
        o += REC_HEADER + entry.copy(body, o + REC_HEADER)
      }
    await io.writeFileAtomic(path.join(this.db.dir, HISTORY_FILE), body, mayRename)
  }
}

/**
 * The file's bytes; empty when there is none (or it is not one). A file the disk fails to
 * read throws: taken for an empty one, the next pass would write over what it holds.
 */
export async function readHistory(dir: string): Promise<Buffer> {
  const file = path.join(dir, HISTORY_FILE)
  let fd: number
  try {
    fd = io.openSync(file, 'r')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return Buffer.alloc(0)
    throw err
  }
  try {
    // Larger than any this engine writes: not one of ours (and not to be held in memory).
    const size = io.sizeOf(file)
    if (size > KEEP_TOTAL * 2) return Buffer.alloc(0)
    const text = Buffer.allocUnsafe(size)
    for (let got = 0; got < size; ) {
      const n = await io.read(fd, text, got, Math.min(IO_PIECE, size - got), got)
      if (n <= 0) return text.subarray(0, got)
      got += n
    }
    return text.subarray(0, MAGIC.length).equals(MAGIC) ? text : Buffer.alloc(0)
  } finally {
    io.closeSync(fd)
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
export async function writeHistory(
  keep: HistoryKeep,
  dir: string,
  mayRename: () => void,
): Promise<boolean> {
  try {
    await keep.write(mayRename)
    await fsyncDirAsync(dir)
    return true
  } catch {
    try {
      io.rmSync(path.join(dir, `${HISTORY_FILE}.tmp`))
    } catch {}
    return false
  }
}
