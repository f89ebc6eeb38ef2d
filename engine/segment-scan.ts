// Reads a whole segment file back into entries, telling a torn tail (the last write cut
// short by a crash) from damage in the middle (intact records follow the bad bytes).
import path from 'node:path'
import { EngineError } from './errors.js'
import {
  ENTRY_HEADER,
  type EntryInfo,
  REC_HEADER,
  SEG_HEADER,
  type SegmentHeader,
  SEG_COMPACTED,
  checkRecord,
  entryInfo,
  entryKey,
  entryKeyLen,
  entryLength,
  entryNsId,
  readSegmentHeader,
  recordCount,
  segmentBaseVersion,
  segmentFlags,
  segmentHeader,
} from './record.js'
import { SEGMENT_NAME } from './parts.js'

export interface Dropped {
  file: string
  from: number
  to: number
  reason: string
  /** The keys the damaged span still names legibly (its entry headers survived). */
  keys?: { nsId: number; key: string }[]
}

/** Whatever keys a damaged span still names: entry headers read without trusting checksums. */
function legibleKeys(buf: Buffer, from: number, to: number): { nsId: number; key: string }[] {
  const out: { nsId: number; key: string }[] = []
  let q = from + REC_HEADER
  while (q + ENTRY_HEADER <= to && out.length < 1000) {
    const keyLen = entryKeyLen(buf, q)
    if (keyLen === 0 || keyLen > 512 || q + ENTRY_HEADER + keyLen > to) break
    out.push({ nsId: entryNsId(buf, q), key: entryKey(buf, q) })
    q += entryLength(buf, q)
  }
  return out
}

export interface ScanResult {
  header: SegmentHeader | undefined
  entries: EntryInfo[]
  /** Where the intact data ends; the file is cut here when shorter than the file. */
  validEnd: number
  /** Spans left out by repair (a torn tail is not listed: it was never acknowledged). */
  dropped: Dropped[]
}

/**
 * `mayBeTorn`: the segment may have been the one being appended to when the process died,
 * so damage with nothing intact after it is a torn tail and is cut off silently. `unsealed`:
 * the manifest does not name the segment, so zeros from the last record to the end are
 * zero-filled space the log never wrote (prealloc.ts), not damage. Any other damage throws
 * CORRUPT naming the file and offset, unless `repair` is set, in which case the bad span is
 * skipped and reported. FORMAT.md argues the rules.
 */
export function scanSegment(
  file: string,
  buf: Buffer,
  mayBeTorn: boolean,
  repair: boolean,
  unsealed = false,
): ScanResult {
  const name = path.basename(file)
  let header = readSegmentHeader(buf)
  const dropped: Dropped[] = []
  if (!header && repair && rebuildHeader(name, buf)) {
    // Its records are intact: dropping them with the header would bring back what they
    // overwrote or deleted. The rebuilt header is reported, though nothing is left out.
    header = readSegmentHeader(buf)
    dropped.push({ file: name, from: 0, to: 0, reason: 'damaged segment header, rebuilt' })
  }
  if (!header) {
    // A segment created just before a crash may not even hold its whole header yet.
    // Nor, zero-filled ahead before its header reached the disk, hold more than zeros.
    if (
      (mayBeTorn && buf.length < SEG_HEADER + REC_HEADER + ENTRY_HEADER) ||
      ((mayBeTorn || unsealed) && isZero(buf, 0, buf.length))
    ) {
      return { header, entries: [], validEnd: 0, dropped }
    }
    if (!repair) throw new EngineError('CORRUPT', `${name}: damaged segment header at offset 0`)
    dropped.push({ file: name, from: 0, to: buf.length, reason: 'damaged segment header' })
    return { header, entries: [], validEnd: 0, dropped }
  }
  const entries: EntryInfo[] = []
  let p = SEG_HEADER
  const end = buf.length
  let validEnd = end
  while (p < end) {
    const n = checkRecord(buf, p, end)
    if (n > 0) {
      const count = recordCount(buf, p)
      let q = p + REC_HEADER
      for (let i = 0; i < count; i++) {
        const e = entryInfo(buf, q, q)
        entries.push(e)
        q += e.len
      }
      p += n
      continue
    }
    if ((unsealed || mayBeTorn) && isZero(buf, p, end)) {
      validEnd = p
      break
    }
    const next = findNextRecord(buf, p + 1, end)
    if (next < 0) {
      if (!mayBeTorn) {
        if (!repair)
          throw new EngineError(
            'CORRUPT',
            `${name}: damaged record at offset ${p}; nothing intact follows, but this segment was complete`,
          )
        dropped.push({
          file: name,
          from: p,
          to: end,
          reason: 'damaged record at the end',
          keys: legibleKeys(buf, p, end),
        })
      }
      validEnd = p
      break
    }
    if (!repair) {
      throw new EngineError(
        'CORRUPT',
        `${name}: damaged record at offset ${p}, intact records follow at ${next}; open with repair: true to salvage`,
      )
    }
    dropped.push({
      file: name,
      from: p,
      to: next,
      reason: 'damaged record',
      keys: legibleKeys(buf, p, next),
    })
    p = next
  }
  return { header, entries, validEnd, dropped }
}

/**
 * Writes a new header over a damaged one, in `buf`, when records after it check out: the id
 * from the file name, the base version and the compaction flag from the old bytes where they
 * still read as such (one damaged byte rarely touches them), else 0. True when it did.
 */
function rebuildHeader(name: string, buf: Buffer): boolean {
  const id = SEGMENT_NAME.exec(name)?.[1]
  if (id === undefined || buf.length < SEG_HEADER + REC_HEADER + ENTRY_HEADER) return false
  if (findNextRecord(buf, SEG_HEADER, buf.length) < 0) return false
  const base = segmentBaseVersion(buf)
  const flags = segmentFlags(buf)
  segmentHeader(
    Number(id),
    Number.isInteger(base) && base >= 0 ? base : 0,
    flags === SEG_COMPACTED ? SEG_COMPACTED : 0,
  ).copy(buf, 0)
  return true
}

const SECTOR = 512
let zeroSector: Buffer | undefined

/** Whether buf[from, to) is all zero bytes. */
export function isZero(buf: Buffer, from: number, to: number): boolean {
  zeroSector ??= Buffer.alloc(SECTOR)
  for (let p = from; p < to; p += SECTOR) {
    const n = Math.min(SECTOR, to - p)
    if (buf.compare(zeroSector, 0, n, p, p + n) !== 0) return false
  }
  return true
}

/** The offset of the next intact record at or after `from`, or -1. */
function findNextRecord(buf: Buffer, from: number, end: number): number {
  for (let p = from; p + REC_HEADER + ENTRY_HEADER <= end; p++) {
    if (checkRecord(buf, p, end) > 0) return p
  }
  return -1
}
