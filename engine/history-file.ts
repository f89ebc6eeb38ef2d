// History files: the recent changes compaction takes out of the log. The log is the history
// of what happened (history.ts reads it back), but a pass drops overwritten and deleted
// entries, and the entries it copies land in its output among older data, where they no
// longer read as what happened. So each pass keeps, from the segments it rewrites, every
// entry still within its namespace's window (its last KEEP_CHANGES changes, KEEP_BYTES at
// most), and adds them to that namespace's file before the pass can delete a segment
// (FORMAT.md, "History files").
//
// One file per namespace, so that the window holds for each however many are busy: a pass
// appends to the files of the namespaces it took entries of, and a watch resuming in one
// namespace reads that namespace's file alone. Before these, one file (HISTORY) held every
// namespace's, 64 MiB in all; it is still read, and the next pass moves what it holds into
// the namespaces' files.
import path from 'node:path'
import type { DbCore } from './db-core.js'
import { IO_PIECE, fsyncDirAsync, io } from './io.js'
import { HISTORY_NAME, historyFile } from './parts.js'
import {
  REC_HEADER,
  SEG_HEADER,
  checkRecord,
  entryLength,
  entryNsId,
  entryVersion,
  recordBodyLength,
  recordCount,
  sealRecord,
} from './record.js'

/** The single file of every namespace's history, as engines before history files kept it. */
export const LEGACY_HISTORY = 'HISTORY'
/** Each namespace's window: its last 10,000 changes... */
export const KEEP_CHANGES = 10_000
/** ...or fewer, where they come to more than 64 MiB of entries. */
export const KEEP_BYTES = 64 * 1024 * 1024
/**
 * What a pass holds in memory before it writes the namespaces holding most to their files:
 * a pass over many busy namespaces holds a bounded amount, whatever their windows come to.
 */
const HELD_BYTES = 64 * 1024 * 1024
/** A file's first bytes; the rest of its 32-byte header is zeros. */
const MAGIC = Buffer.from('CAIRNHST')

/** One namespace's entries kept so far, by version, and their bytes. */
interface Kept {
  entries: Map<number, Buffer>
  bytes: number
}

/** What a namespace's file holds, as this process last wrote or read it. */
interface FileInfo {
  /** Its bytes up to the end of its last intact record (0: no file). */
  length: number
  entries: number
  /** The lowest version among its entries. */
  oldest: number
}

/**
 * Each database's files as described so far, by namespace id: a pass appends to a file it
 * knows, and reads one it does not (once per process) to find where its intact records end.
 */
const described = new WeakMap<DbCore, Map<number, FileInfo>>()

export class HistoryKeep {
  private byNs = new Map<number, Kept>()
  private held = 0
  /** Whether the legacy file was read in (and goes once its entries are in their files). */
  private legacy = false
  /** Whether a file could not be written: the pass goes on, and the legacy file stays. */
  private failed = false

  private readonly files: Map<number, FileInfo>

  constructor(
    private readonly db: DbCore,
    /** Throws when the directory is no longer this process's: nothing is renamed then. */
    private readonly mayRename: () => void,
  ) {
    let files = described.get(db)
    if (!files) {
      files = new Map()
      described.set(db, files)
    }
    this.files = files
  }

  /** Keeps a copy of each entry of the record at buf[at] that is within its window. */
  takeRecord(buf: Buffer, at: number, count: number): void {
    let q = at + REC_HEADER
    for (let i = 0; i < count; i++) {
      const len = entryLength(buf, q)
      const nsId = entryNsId(buf, q)
      const version = entryVersion(buf, q)
      const n = this.db.keydir.byId.get(nsId)
      if (n !== undefined && version > n.version - KEEP_CHANGES) {
        let kept = this.byNs.get(nsId)
        if (!kept) {
          kept = { entries: new Map(), bytes: 0 }
          this.byNs.set(nsId, kept)
        }
        if (!kept.entries.has(version)) {
          kept.entries.set(version, Buffer.from(buf.subarray(q, q + len)))
          kept.bytes += len
          this.held += len
        }
        // Entries come oldest first, as a rule: the oldest go as soon as the bound is passed,
        // so a pass holds little more than it writes.
        if (kept.bytes > KEEP_BYTES * 1.25) this.trim(kept, KEEP_BYTES)
      }
      q += len
    }
  }

  /** Whether the pass should write some namespaces out (see spill) before it goes on. */
  get full(): boolean {
    return this.held > HELD_BYTES
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
      this.held -= len
    }
  }

  /**
   * Takes in the legacy file, whose entries this pass moves into their namespaces' files.
   * @throws when it cannot be read (see readHistory): the pass then fails, as one that went
   *   on would delete what only it holds.
   */
  async load(): Promise<void> {
    const file = path.join(this.db.dir, LEGACY_HISTORY)
    const text = await readHistory(file)
    if (text.length === 0) return
    forEachRecord(text, (at, count) => this.takeRecord(text, at, count))
    this.legacy = true
    if (this.full) await this.spill()
  }

  /** Writes the namespaces holding most to their files, until half the bound is held. */
  async spill(): Promise<void> {
    const most = [...this.byNs.entries()].sort((a, b) => b[1].bytes - a[1].bytes)
    for (const [nsId, kept] of most) {
      if (this.held <= HELD_BYTES / 2) break
      await this.writeOne(nsId, kept)
    }
  }

  /**
   * Adds a namespace's kept entries to its file. Appended, as a rule: readers take records
   * in any order and keep one per version, so a pass writes what it took, not the file.
   * Rewritten with only its window, newest first, once the file holds about twice that (or
   * half of it has left the window), and when it is new or not yet described: durable under
   * its temporary name, then renamed.
   *
   * A file the disk cannot read throws, and fails the pass: going on would write over what it
   * holds, or delete the segments whose recent changes are not written. A disk that refuses
   * the write does not: compaction is what frees space, and the watches that reach the gap
   * list again, as after any (FORMAT.md).
   */
  private async writeOne(nsId: number, kept: Kept): Promise<void> {
    const file = path.join(this.db.dir, historyFile(nsId))
    this.byNs.delete(nsId)
    this.held -= kept.bytes
    const n = this.db.keydir.byId.get(nsId)
    if (n === undefined) return // dropped meanwhile: its file goes at the end of the pass
    let info = this.files.get(nsId)
    if (info === undefined) {
      // A crash may have cut an append short: the file is good up to its last intact record.
      info = describe(await readHistory(file))
      this.files.set(nsId, info)
    }
    const fresh = info.length === 0
    const grown =
      info.entries + kept.entries.size > 2 * KEEP_CHANGES ||
      info.length + kept.bytes + kept.entries.size * REC_HEADER > 2 * KEEP_BYTES ||
      info.oldest <= n.version - 2 * KEEP_CHANGES
    // Read before the try: a read that fails is the pass's failure.
    const old = grown && !fresh ? await readHistory(file) : Buffer.alloc(0)
    try {
      if (fresh || grown) {
        const merged = new HistoryKeep(this.db, this.mayRename)
        merged.byNs.set(nsId, kept)
        merged.held = kept.bytes
        forEachRecord(old, (at, count) => merged.takeRecord(old, at, count))
        // The newest KEEP_CHANGES (its window moved on since some came in).
        merged.trim(kept, KEEP_BYTES, KEEP_CHANGES)
        const body = Buffer.concat([header(), records(kept)])
        this.files.delete(nsId)
        await io.writeFileAtomic(file, body, this.mayRename)
        this.files.set(nsId, describe(body))
      } else {
        const body = records(kept)
        const fd = io.openSync(file, 'r+')
        try {
          // What a failed append left past the last intact record goes first.
          io.ftruncateSync(fd, info.length)
          await io.writeAll(fd, body, 0, body.length, info.length)
          await io.fsync(fd)
        } finally {
          io.closeSync(fd)
        }
        info.length += body.length
        info.entries += kept.entries.size
        for (const v of kept.entries.keys()) if (v < info.oldest) info.oldest = v
      }
    } catch {
      // A write that failed is history's loss alone. The file is described again next time.
      this.files.delete(nsId)
      this.failed = true
      try {
        io.rmSync(`${file}.tmp`)
      } catch {}
    }
  }

  /**
   * Writes every namespace still held to its file, and makes the renames durable, before the
   * pass deletes a segment. Then the files of namespaces that are gone go, and the legacy
   * file once every file was written. @throws as writeOne does; true when all was written.
   */
  async write(): Promise<boolean> {
    for (const [nsId, kept] of [...this.byNs]) await this.writeOne(nsId, kept)
    // Unsynced, the renames may not outlive a crash: the pass fails before deleting anything.
    await fsyncDirAsync(this.db.dir)
    try {
      for (const name of io.readdirSync(this.db.dir)) {
        const m = HISTORY_NAME.exec(name)
        if (m && !this.db.keydir.byId.has(Number(m[1]))) {
          io.rmSync(path.join(this.db.dir, name))
          this.files.delete(Number(m[1]))
        }
      }
      if (this.legacy && !this.failed) {
        this.mayRename()
        io.rmSync(path.join(this.db.dir, LEGACY_HISTORY))
      }
    } catch {
      this.failed = true
    }
    return !this.failed
  }
}

/**
 * A history file's bytes; empty when there is none (or it is not one). A file the disk fails
 * to read throws: taken for an empty one, the next pass would write over what it holds.
 */
export async function readHistory(file: string): Promise<Buffer> {
  let fd: number
  try {
    fd = io.openSync(file, 'r')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return Buffer.alloc(0)
    throw err
  }
  try {
    // Larger than any this engine writes (a file is rewritten before it passes twice a
    // window): not one of ours, and not to be held in memory.
    const size = io.sizeOf(file)
    if (size > KEEP_BYTES * 3) return Buffer.alloc(0)
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
    each(p, recordCount(buf, p))
    p += len
  }
}

/** A history file's header: MAGIC, then zeros. */
function header(): Buffer {
  const h = Buffer.alloc(SEG_HEADER)
  MAGIC.copy(h, 0)
  return h
}

/** The kept entries as records, one entry each. */
function records(kept: Kept): Buffer {
  const body = Buffer.alloc(kept.bytes + kept.entries.size * REC_HEADER)
  let o = 0
  for (const entry of kept.entries.values()) {
    sealRecord(body, o, entry.length, 1)
    o += REC_HEADER + entry.copy(body, o + REC_HEADER)
  }
  return body
}

/** What a file's bytes (readHistory's) hold: where its intact records end, how many, the oldest. */
function describe(text: Buffer): FileInfo {
  const info: FileInfo = { length: 0, entries: 0, oldest: Number.POSITIVE_INFINITY }
  if (text.length === 0) return info
  info.length = SEG_HEADER
  forEachRecord(text, (at) => {
    info.length = at + REC_HEADER + recordBodyLength(text, at)
    info.entries++
    const v = entryVersion(text, at + REC_HEADER)
    if (v < info.oldest) info.oldest = v
  })
  return info
}
