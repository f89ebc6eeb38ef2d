// Byte layouts of segment headers, records and entries. engine/FORMAT.md describes them.
import { crc32 } from 'node:zlib'

export const SEG_MAGIC = Buffer.from('CAIRNSEG')
export const FORMAT_VERSION = 1
/** magic(8) format(u32) segId(u32) baseVersion(f64) crc(u32) flags(u32); see FORMAT.md */
export const SEG_HEADER = 32
/** Segment flag: written by compaction (fsynced whole before it was named), never torn. */
export const SEG_COMPACTED = 1
/** hcrc(u32) length(u32) count(u32) */
export const REC_HEADER = 12
/** crc(u32) type(u8) flags(u8) keyLen(u16) nsId(u32) version(f64) expiresAt(f64) valueLen(u32) */
export const ENTRY_HEADER = 32

export const PUT = 1
export const DEL = 2
/** Value bytes are the caller's raw bytes, not msgpack. */
export const FLAG_RAW = 1

const TABLE = new Int32Array(256)
for (let n = 0; n < 256; n++) {
  let c = n
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
  TABLE[n] = c
}

/**
 * CRC-32 (zlib's) of buf[start, end). Short spans, such as every record header, are summed
 * here: zlib is faster per byte, but reaching it costs a Buffer view and a native call,
 * which on a few dozen bytes is most of the work.
 */
export function crc(buf: Buffer, start: number, end: number): number {
  if (end - start > 64) return crc32(buf.subarray(start, end))
  let c = -1
  for (let i = start; i < end; i++) c = TABLE[(c ^ buf[i]!) & 0xff]! ^ (c >>> 8)
  return (c ^ -1) >>> 0
}

/**
 * Copies src[from, to) to dst at `at`. Short spans go byte by byte: Buffer#copy makes a
 * view object per call, and per entry of a large compaction that garbage costs GC pauses.
 */
export function copyBytes(src: Buffer, from: number, to: number, dst: Buffer, at: number): void {
  if (to - from > 256) {
    src.copy(dst, at, from, to)
    return
  }
  for (let i = from; i < to; i++) dst[at++] = src[i]!
}

export function segmentHeader(segId: number, baseVersion: number, flags = 0): Buffer {
  const b = Buffer.alloc(SEG_HEADER)
  SEG_MAGIC.copy(b, 0)
  b.writeUInt32LE(FORMAT_VERSION, 8)
  b.writeUInt32LE(segId, 12)
  b.writeDoubleLE(baseVersion, 16)
  b.writeUInt32LE(flags, 28)
  b.writeUInt32LE((crc(b, 0, 24) ^ crc(b, 28, 32)) >>> 0, 24)
  return b
}

export interface SegmentHeader {
  segId: number
  baseVersion: number
  flags: number
}

/** The header's fields, or undefined when it is damaged or of another format. */
export function readSegmentHeader(b: Buffer): SegmentHeader | undefined {
  if (b.length < SEG_HEADER) return undefined
  if (!b.subarray(0, 8).equals(SEG_MAGIC)) return undefined
  if (b.readUInt32LE(24) !== (crc(b, 0, 24) ^ crc(b, 28, 32)) >>> 0) return undefined
  if (b.readUInt32LE(8) !== FORMAT_VERSION) return undefined
  return { segId: b.readUInt32LE(12), baseVersion: b.readDoubleLE(16), flags: b.readUInt32LE(28) }
}

/**
 * Whether a segment's header says compaction wrote it (SEG_COMPACTED). A header shorter than
 * SEG_HEADER is never compaction output: compaction fsyncs its output whole before it names
 * it, so only a segment the write path was starting can be that short. The one answer to the
 * question, for recovery, compaction and the history read alike.
 */
export function isCompactionOutput(head: Buffer): boolean {
  return head.length >= SEG_HEADER && (head.readUInt32LE(28) & SEG_COMPACTED) !== 0
}

/** The flags word of a segment header, as its bytes have it (damaged or not). */
export function segmentFlags(head: Buffer): number {
  return head.readUInt32LE(28)
}

/** The base version of a segment header, as its bytes have it (damaged or not). */
export function segmentBaseVersion(head: Buffer): number {
  return head.readDoubleLE(16)
}

// The fields of the entry that starts at `q` in `b`. Every reader of entry bytes goes
// through these, so the layout above is written down here alone.

export function entryType(b: Buffer, q: number): number {
  return b[q + 4]!
}
export function entryFlags(b: Buffer, q: number): number {
  return b[q + 5]!
}
export function entryKeyLen(b: Buffer, q: number): number {
  return b.readUInt16LE(q + 6)
}
export function entryNsId(b: Buffer, q: number): number {
  return b.readUInt32LE(q + 8)
}
export function entryVersion(b: Buffer, q: number): number {
  return b.readDoubleLE(q + 12)
}
export function entryExpiresAt(b: Buffer, q: number): number {
  return b.readDoubleLE(q + 20)
}
export function entryValueLen(b: Buffer, q: number): number {
  return b.readUInt32LE(q + 28)
}
/** The whole entry's length: header, key and value. */
export function entryLength(b: Buffer, q: number): number {
  return ENTRY_HEADER + b.readUInt16LE(q + 6) + b.readUInt32LE(q + 28)
}
/** Where the entry's key starts. */
export function entryKeyAt(q: number): number {
  return q + ENTRY_HEADER
}
/** Where the entry's value starts. */
export function entryValueAt(b: Buffer, q: number): number {
  return q + ENTRY_HEADER + b.readUInt16LE(q + 6)
}
export function entryKey(b: Buffer, q: number): string {
  return b.toString('utf8', q + ENTRY_HEADER, q + ENTRY_HEADER + b.readUInt16LE(q + 6))
}

// The fields of the record that starts at `p` in `b`.

/** The length of the record's entries, after its header. */
export function recordBodyLength(b: Buffer, p: number): number {
  return b.readUInt32LE(p + 4)
}
export function recordCount(b: Buffer, p: number): number {
  return b.readUInt32LE(p + 8)
}

/** Fills in an entry's header and checksum; key and value bytes are already in place. */
export function sealEntry(
  b: Buffer,
  at: number,
  type: number,
  flags: number,
  keyLen: number,
  nsId: number,
  version: number,
  expiresAt: number,
  valueLen: number,
): void {
  b[at + 4] = type
  b[at + 5] = flags
  b.writeUInt16LE(keyLen, at + 6)
  b.writeUInt32LE(nsId, at + 8)
  b.writeDoubleLE(version, at + 12)
  b.writeDoubleLE(expiresAt, at + 20)
  b.writeUInt32LE(valueLen, at + 28)
  b.writeUInt32LE(crc(b, at + 4, at + ENTRY_HEADER + keyLen + valueLen), at)
}

export function sealRecord(b: Buffer, at: number, length: number, count: number): void {
  b.writeUInt32LE(length, at + 4)
  b.writeUInt32LE(count, at + 8)
  b.writeUInt32LE(crc(b, at + 4, at + 12), at)
}

/** An entry as found in a segment or hint file. */
export interface EntryInfo {
  type: number
  flags: number
  nsId: number
  version: number
  expiresAt: number
  /** Offset of the entry in its segment file, and its length in bytes. */
  off: number
  len: number
  key: string
  valueLen: number
}

/** Checks an entry in b at `at` (within `end`); its length, or -1 when damaged. */
export function checkEntry(b: Buffer, at: number, end: number): number {
  if (at + ENTRY_HEADER > end) return -1
  const len = entryLength(b, at)
  if (at + len > end) return -1
  if (b.readUInt32LE(at) !== crc(b, at + 4, at + len)) return -1
  return len
}

/**
 * Checks the whole record at `at`: its header checksum, that its length fits, and every
 * entry's checksum. Returns the record's total length, or -1 when anything is wrong.
 */
export function checkRecord(b: Buffer, at: number, end: number): number {
  if (at + REC_HEADER > end) return -1
  if (b.readUInt32LE(at) !== crc(b, at + 4, at + 12)) return -1
  const length = recordBodyLength(b, at)
  const count = recordCount(b, at)
  const stop = at + REC_HEADER + length
  if (count === 0 || stop > end) return -1
  let p = at + REC_HEADER
  for (let i = 0; i < count; i++) {
    const n = checkEntry(b, p, stop)
    if (n < 0) return -1
    p += n
  }
  return p === stop ? stop - at : -1
}

/** Reads the fields of a checked entry. */
export function entryInfo(b: Buffer, at: number, fileOff: number): EntryInfo {
  const keyLen = entryKeyLen(b, at)
  const valueLen = entryValueLen(b, at)
  return {
    type: entryType(b, at),
    flags: entryFlags(b, at),
    nsId: entryNsId(b, at),
    version: entryVersion(b, at),
    expiresAt: entryExpiresAt(b, at),
    off: fileOff,
    len: ENTRY_HEADER + keyLen + valueLen,
    key: b.toString('utf8', at + ENTRY_HEADER, at + ENTRY_HEADER + keyLen),
    valueLen,
  }
}
