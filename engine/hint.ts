// Hint files: for a sealed segment, every entry's key and position without the values,
// so opening reads a few bytes per key instead of the whole log. A hint is only a shortcut:
// when it is missing or fails its checksum the segment itself is scanned.
import { io } from './io.js'
import {
  copyBytes,
  crc,
  entryExpiresAt,
  entryFlags,
  entryKeyAt,
  entryKeyLen,
  entryLength,
  entryNsId,
  entryType,
  entryVersion,
} from './record.js'

export const HINT_MAGIC = Buffer.from('CAIRNHNT')
/** magic(8) segId(u32) segSize(u32) count(u32) reserved(u32) baseVersion(f64); see FORMAT.md */
export const HINT_HEADER = 32
/** type(u8) flags(u8) keyLen(u16) nsId(u32) version(f64) expiresAt(f64) off(u32) len(u32) */
export const HINT_ENTRY = 32

export class HintBuilder {
  buf: Buffer
  len = HINT_HEADER
  count = 0

  /** `buf`: a buffer to build in (compaction reuses them); grown when it fills. */
  constructor(buf?: Buffer) {
    this.buf = buf ?? Buffer.allocUnsafe(4096)
  }

  /**
   * Adds the entry that starts at `q` in `src` and at `off` in its segment: its fields are
   * read from its own bytes, so no caller lists them (nor builds an object to carry them).
   */
  add(src: Buffer, q: number, off: number): void {
    const keyLen = entryKeyLen(src, q)
    const keyAt = entryKeyAt(q)
    const need = this.len + HINT_ENTRY + keyLen + 4
    if (need > this.buf.length) {
      const b = Buffer.allocUnsafe(Math.max(need, this.buf.length * 2))
      this.buf.copy(b, 0, 0, this.len)
      this.buf = b
    }
    const b = this.buf
    const at = this.len
    b[at] = entryType(src, q)
    b[at + 1] = entryFlags(src, q)
    b.writeUInt16LE(keyLen, at + 2)
    b.writeUInt32LE(entryNsId(src, q), at + 4)
    b.writeDoubleLE(entryVersion(src, q), at + 8)
    b.writeDoubleLE(entryExpiresAt(src, q), at + 16)
    b.writeUInt32LE(off, at + 24)
    b.writeUInt32LE(entryLength(src, q), at + 28)
    copyBytes(src, keyAt, keyAt + keyLen, b, at + HINT_ENTRY)
    this.len = at + HINT_ENTRY + keyLen
    this.count++
  }

  /** The finished file's bytes. */
  finish(segId: number, segSize: number, baseVersion: number): Buffer {
    if (this.len + 4 > this.buf.length) {
      const grown = Buffer.allocUnsafe(this.len + 4)
      this.buf.copy(grown, 0, 0, this.len)
      this.buf = grown
    }
    const b = this.buf
    HINT_MAGIC.copy(b, 0)
    b.writeUInt32LE(segId, 8)
    b.writeUInt32LE(segSize, 12)
    b.writeUInt32LE(this.count, 16)
    b.writeUInt32LE(0, 20)
    b.writeDoubleLE(baseVersion, 24)
    b.writeUInt32LE(crc(b, 0, this.len), this.len)
    return b.subarray(0, this.len + 4)
  }
}

/** Writes a hint file via a temporary name so a reader never sees half of one. */
export function writeHint(file: string, bytes: Buffer): void {
  io.writeFileAtomicSync(file, bytes)
}

/**
 * The same off the event loop: a hint holds an entry per record of a whole segment, megabytes
 * whose synchronous write and fsync stalled every request for tens of milliseconds.
 */
export function writeHintAsync(file: string, bytes: Buffer): Promise<void> {
  return io.writeFileAtomic(file, bytes)
}

/** A hint file that checked out: its bytes and how many entries they hold. */
export interface Hint {
  buf: Buffer
  count: number
  baseVersion: number
  /** The checksum the file ends with, as the manifest records it. */
  crc: number
}

/** The hint, or undefined when it is missing, damaged or not for this segment as it is now. */
export function readHint(file: string, segId: number, segSize: number): Hint | undefined {
  let b: Buffer
  try {
    b = io.readFileSync(file)
  } catch {
    return undefined
  }
  if (b.length < HINT_HEADER + 4) return undefined
  const end = b.length - 4
  if (!b.subarray(0, 8).equals(HINT_MAGIC)) return undefined
  if (b.readUInt32LE(end) !== crc(b, 0, end)) return undefined
  if (b.readUInt32LE(8) !== segId || b.readUInt32LE(12) !== segSize) return undefined
  const count = b.readUInt32LE(16)
  // Walk the lengths once, so a visitor never runs off the end of a malformed file.
  let p = HINT_HEADER
  for (let i = 0; i < count; i++) {
    if (p + HINT_ENTRY > end) return undefined
    p += HINT_ENTRY + b.readUInt16LE(p + 2)
  }
  if (p !== end) return undefined
  return {
    buf: b.subarray(0, end),
    count,
    baseVersion: b.readDoubleLE(24),
    crc: b.readUInt32LE(end),
  }
}

export type EntryVisitor = (
  type: number,
  nsId: number,
  key: string,
  version: number,
  expiresAt: number,
  off: number,
  len: number,
) => void

/**
 * Buffer's own decoder, which toString('utf8', ...) calls after argument checks: a million
 * keys are decoded on every open, and the checks cost a fifth of it.
 */
type Utf8Sliceable = Buffer & { utf8Slice(start: number, end: number): string }

/**
 * Calls `visit` for every entry of a checked hint, in file order, without building objects;
 * `from`: only the entries at or after this offset in the segment.
 */
export function forEachHintEntry(h: Hint, visit: EntryVisitor, from = 0): void {
  const b = h.buf
  let p = HINT_HEADER
  for (let i = 0; i < h.count; i++) {
    const keyLen = b.readUInt16LE(p + 2)
    if (from > 0 && b.readUInt32LE(p + 24) < from) {
      p += HINT_ENTRY + keyLen
      continue
    }
    visit(
      b[p]!,
      b.readUInt32LE(p + 4),
      (b as Utf8Sliceable).utf8Slice(p + HINT_ENTRY, p + HINT_ENTRY + keyLen),
      b.readDoubleLE(p + 8),
      b.readDoubleLE(p + 16),
      b.readUInt32LE(p + 24),
      b.readUInt32LE(p + 28),
    )
    p += HINT_ENTRY + keyLen
  }
}
