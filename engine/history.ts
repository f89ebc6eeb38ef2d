// Recent changes read back from the log: what a change feed held in memory before the
// process stopped. The log is the history: every durable write is a record in it until
// compaction rewrites its segment, and what was recent there is then kept in HISTORY
// (history-file.ts). So HISTORY and the newest segments give back the newest changes, and a
// caller that needs an unbroken run (a watch resuming from a version) keeps only
// the versions that follow one another without a gap: a version is given to one write only, so
// a run with no gap is exactly what happened.
import type { CommittedChange, DbCore } from './db-core.js'
import { forEachRecord, readHistory } from './history-file.js'
import { io } from './io.js'
import { DEL, ENTRY_HEADER, REC_HEADER, SEG_COMPACTED, SEG_HEADER, entryInfo } from './record.js'
import { decodeValue } from './values.js'

/**
 * The changes in the newest segments, reading at most about `maxBytes` of the log (always the
 * whole newest segment with data), in no particular order. A segment that compaction replaces
 * while it is read is left out.
 */
export async function recentChanges(db: DbCore, maxBytes: number): Promise<CommittedChange[]> {
  const out: CommittedChange[] = []
  // What compaction took out of the log while it was recent (history-file.ts).
  const kept = await readHistory(db.dir).catch(() => Buffer.alloc(0))
  forEachRecord(kept, (at, count) => changesOf(db, kept, at, count, out))
  const segs = [...db.segments.values()].sort((a, b) => b.id - a.id)
  let budget = maxBytes
  let read = 0
  for (const seg of segs) {
    const size = seg.durable
    if (size <= SEG_HEADER) continue
    if (size > budget && read > 0) break
    const epoch = db.compactionEpoch
    const buf = Buffer.allocUnsafe(size)
    try {
      // Compaction's output holds old data, copied or turned into tombstones (an expired put
      // becomes one at its own version): it is not a record of what happened. What was
      // recent in the segments it replaced is in HISTORY.
      if ((await io.read(seg.fd, buf, 0, SEG_HEADER, 0)) < SEG_HEADER) break
      if (buf.readUInt32LE(28) & SEG_COMPACTED) continue
      let got = 0
      while (got < size) {
        const n = await io.read(seg.fd, buf, got, size - got, got)
        if (n <= 0) break
        got += n
      }
      if (got < size) break
    } catch {
      break // closed or replaced meanwhile: the history is shorter, never wrong
    }
    if (db.compactionEpoch !== epoch || db.isClosed()) break
    budget -= size
    read++
    forEachRecord(buf, (at, count) => changesOf(db, buf, at, count, out))
  }
  return out
}

/** Appends to `out` the changes of the record at buf[p] (`count` entries) of live namespaces. */
function changesOf(
  db: DbCore,
  buf: Buffer,
  p: number,
  count: number,
  out: CommittedChange[],
): void {
  let q = p + REC_HEADER
  for (let i = 0; i < count; i++) {
    const e = entryInfo(buf, q, q)
    const n = db.keydir.byId.get(e.nsId)
    if (n !== undefined) {
      if (e.type === DEL) out.push({ ns: n.name, type: 'delete', key: e.key, version: e.version })
      else {
        const start = q + ENTRY_HEADER + (e.len - ENTRY_HEADER - e.valueLen)
        const c: CommittedChange = {
          ns: n.name,
          type: 'put',
          key: e.key,
          version: e.version,
          value: decodeValue(e.flags, buf, start, start + e.valueLen),
        }
        if (e.expiresAt !== 0) c.expiresAt = e.expiresAt
        out.push(c)
      }
    }
    q += e.len
  }
}
