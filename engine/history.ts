// A namespace's recent changes read back from the log: what a change feed holds in memory,
// for a watch that resumes from before it (after a restart, or once memory shed it). The
// log is the history: every durable write is a record in it until compaction rewrites its
// segment, and what was recent there is then kept in the namespace's history file
// (history-file.ts). A caller
// that needs an unbroken run (a watch resuming from a version) keeps only the versions that
// follow one another without a gap: a version is given to one write only, so a run with no
// gap is exactly what happened.
//
// One namespace is read at a time, with no bound shared with the others: the contract's
// window is per namespace, and a budget for all of them would leave out the quiet ones.
import type { CommittedChange, DbCore } from './db-core.js'
import path from 'node:path'
import { KEEP_BYTES, KEEP_CHANGES, LEGACY_HISTORY, readHistory } from './history-file.js'
import { IO_PIECE, io } from './io.js'
import { type Segment, historyFile, noteMin } from './parts.js'
import {
  DEL,
  REC_HEADER,
  SEG_HEADER,
  checkRecord,
  entryInfo,
  entryLength,
  entryNsId,
  entryValueAt,
  entryVersion,
  isCompactionOutput,
  recordCount,
} from './record.js'
import { decodeValue } from './values.js'
import { SLICE_MS, yieldToRequests } from './yield.js'

/** What namespaceChanges found. */
export interface FoundChanges {
  /** In no particular order. */
  changes: CommittedChange[]
  /**
   * false when a file could not be read (the disk refused, or the database closed): what is
   * missing may be there on another try. true when all that holds the history was read.
   */
  complete: boolean
}

/** A namespace whose history is wanted, after which version. */
export interface Wanted {
  ns: string
  since: number
}

/**
 * The changes of namespace `ns` after version `since` that the log still holds: at least
 * its newest KEEP_CHANGES (or KEEP_BYTES) of them, where it has that many, and possibly
 * more. None for a namespace that does not exist. See namespacesChanges.
 */
export async function namespaceChanges(
  db: DbCore,
  ns: string,
  since: number,
): Promise<FoundChanges> {
  return (await namespacesChanges(db, [{ ns, since }])).get(ns)!
}

/**
 * The changes of each wanted namespace, as namespaceChanges gives them, read in one pass
 * over the log: resumes that wait together share the reading.
 *
 * Segments are read newest first, and only as far back as needed: a segment compaction
 * did not write holds a namespace's versions in the order they were given, so once one
 * reaches `since`, or the newest window is full, the older ones cannot add to it. Segments
 * known to hold none of the namespaces still wanted are passed over unread. The history
 * files are read last: a pass writes them before it deletes the segments it rewrote, so a
 * segment gone before it was read has its recent entries there. The legacy file comes
 * before the namespaces' own for the same reason: a pass moves its entries there, then
 * deletes it.
 */
export async function namespacesChanges(
  db: DbCore,
  wanted: Wanted[],
): Promise<Map<string, FoundChanges>> {
  const out = new Map<string, FoundChanges>()
  const founds = new Map<number, Found>()
  for (const w of wanted) {
    const n = db.keydir.byName.get(w.ns)
    if (n === undefined) out.set(w.ns, { changes: [], complete: true })
    else if (!founds.has(n.id)) founds.set(n.id, new Found(w.ns, n.id, w.since))
  }
  let complete = true
  const segs = [...db.segments.values()].sort((a, b) => b.id - a.id)
  for (const seg of segs) {
    const open = new Map([...founds].filter(([, f]) => !f.done))
    if (open.size === 0) break
    const known = seg.minVersions
    if (known !== null && ![...open.keys()].some((id) => known.has(id))) continue
    const buf = await readSegment(db, seg)
    if (buf === 'gone' || buf === undefined) continue
    if (buf === 'failed') {
      complete = false
      continue
    }
    // A segment an open took from a checkpoint does not know which namespaces it holds:
    // read whole, it learns, and the next read of other namespaces passes it over.
    const learn = known === null && seg.sealed && buf.length === seg.end
    const mins = learn ? new Map<number, number>() : undefined
    const whole = await take(buf, open, mins)
    if (db.isClosed()) return new Map(wanted.map((w) => [w.ns, { changes: [], complete: false }]))
    if (mins !== undefined && whole && db.segments.get(seg.id) === seg) seg.minVersions = mins
    for (const f of open.values()) if (f.lowest <= f.since + 1 || f.full()) f.done = true
  }
  // What compaction took out of the log while it was recent. Unreadable, the history is
  // shorter, never wrong.
  const legacy = await readHistory(path.join(db.dir, LEGACY_HISTORY)).catch(() => undefined)
  if (legacy === undefined) complete = false
  else await take(legacy, founds)
  for (const [id, f] of founds) {
    const own = await readHistory(path.join(db.dir, historyFile(id))).catch(() => undefined)
    if (own !== undefined) await take(own, new Map([[id, f]]))
    out.set(f.ns, { changes: [...f.changes.values()], complete: complete && own !== undefined })
  }
  return out
}

/**
 * Gives each of `founds` its namespace's entries among the whole, intact records of `buf`
 * (a segment or a history file, records after a 32-byte header), in slices that leave the
 * event loop to requests; sets each one's `lowest` to the lowest version of its namespace
 * met. `mins`, when given, gets the lowest version of every namespace met
 * (Segment.minVersions). Answers whether every byte was such a record.
 */
async function take(
  buf: Buffer,
  founds: Map<number, Found>,
  mins?: Map<number, number>,
): Promise<boolean> {
  for (const f of founds.values()) f.lowest = Number.POSITIVE_INFINITY
  let sliceAt = performance.now()
  let p = SEG_HEADER
  while (p + REC_HEADER <= buf.length) {
    const len = checkRecord(buf, p, buf.length)
    if (len <= 0) break
    const count = recordCount(buf, p)
    let q = p + REC_HEADER
    for (let i = 0; i < count; i++) {
      const nsId = entryNsId(buf, q)
      if (mins !== undefined) noteMin(mins, nsId, entryVersion(buf, q))
      // Other namespaces' entries are passed over by their header alone.
      const f = founds.get(nsId)
      if (f !== undefined) f.meet(buf, q)
      q += entryLength(buf, q)
    }
    p += len
    if (performance.now() - sliceAt >= SLICE_MS) {
      await yieldToRequests(performance.now() - sliceAt)
      sliceAt = performance.now()
    }
  }
  return p === buf.length
}

/**
 * The segment's durable bytes; undefined when it is compaction's output, 'gone' when a
 * compaction replaced it meanwhile (the history files have its recent changes), 'failed'
 * when the disk refused.
 */
async function readSegment(
  db: DbCore,
  seg: Segment,
): Promise<Buffer | 'gone' | 'failed' | undefined> {
  const size = seg.durable
  if (size <= SEG_HEADER) return undefined
  const buf = Buffer.allocUnsafe(size)
  // A compaction removes the segments it replaced from the map as it closes their files: a
  // read after that may have met another file on the same descriptor, and counts for nothing.
  const ours = () => db.segments.get(seg.id) === seg && !db.isClosed()
  try {
    // Compaction's output holds old data, copied or turned into tombstones (an expired put
    // becomes one at its own version): it is not a record of what happened. What was
    // recent in the segments it replaced is in the history files.
    const head = await io.read(seg.fd, buf, 0, SEG_HEADER, 0)
    if (!ours()) return 'gone'
    // A header that did not come back whole is a failed read (the segment holds more).
    if (head < SEG_HEADER) return 'failed'
    if (isCompactionOutput(buf.subarray(0, head))) return undefined
    for (let got = SEG_HEADER; got < size; ) {
      const n = await io.read(seg.fd, buf, got, Math.min(IO_PIECE, size - got), got)
      if (!ours()) return 'gone'
      if (n <= 0) return 'failed'
      got += n
    }
    return buf
  } catch {
    return ours() ? 'failed' : 'gone'
  }
}

/** The changes of one namespace found so far, by version. */
class Found {
  readonly changes = new Map<number, CommittedChange>()
  /** Each change's entry length, by version. */
  private sizes = new Map<number, number>()
  private bytes = 0
  /** The lowest version of the namespace met in the last buffer taken. */
  lowest = Number.POSITIVE_INFINITY
  /** Whether the log holds nothing more the namespace needs (older segments cannot add). */
  done = false

  constructor(
    readonly ns: string,
    readonly nsId: number,
    readonly since: number,
  ) {}

  /** Whether the newest window is already found (all that is left to read is older). */
  full(): boolean {
    return this.changes.size >= KEEP_CHANGES || this.bytes >= KEEP_BYTES
  }

  /** Takes the namespace's entry at buf[q] when it is after `since` and new here. */
  meet(buf: Buffer, q: number): void {
    const version = entryVersion(buf, q)
    if (version < this.lowest) this.lowest = version
    if (version > this.since && !this.changes.has(version)) this.add(buf, q)
  }

  private add(buf: Buffer, q: number): void {
    const e = entryInfo(buf, q, q)
    const c: CommittedChange = { ns: this.ns, type: 'delete', key: e.key, version: e.version }
    if (e.type !== DEL) {
      const start = entryValueAt(buf, q)
      c.type = 'put'
      c.value = decodeValue(e.flags, buf, start, start + e.valueLen)
      if (e.expiresAt !== 0) c.expiresAt = e.expiresAt
    }
    this.changes.set(e.version, c)
    this.sizes.set(e.version, e.len)
    this.bytes += e.len
    // A segment can hold far more of a namespace than its window: what is held stays within
    // a quarter more than the window, the newest kept.
    if (this.changes.size >= 1.25 * KEEP_CHANGES || this.bytes > 1.25 * KEEP_BYTES) this.trim()
  }

  /** Keeps the newest window. */
  private trim(): void {
    const newest = [...this.sizes.keys()].sort((a, b) => b - a)
    let count = 0
    let bytes = 0
    for (const v of newest) {
      if (count < KEEP_CHANGES && bytes < KEEP_BYTES) {
        count++
        bytes += this.sizes.get(v)!
        continue
      }
      this.changes.delete(v)
      this.sizes.delete(v)
    }
    this.bytes = bytes
  }
}
