// Reads of the entries the index points at: from the value cache when it holds them, else
// from their segment with a pread, checked against the entry's checksum.
import path from 'node:path'
import { EngineError } from './errors.js'
import { io } from './io.js'
import type { KeyDir } from './keydir.js'
import type { Segment } from './parts.js'
import { ENTRY_HEADER, checkEntry, entryFlags, entryValueAt } from './record.js'
import type { ValueCache } from './value-cache.js'
import { decodeValue } from './values.js'

export class EntryReads {
  readonly counters = { cacheHits: 0, cacheMisses: 0, corruptReads: 0 }

  constructor(
    private readonly dir: string,
    private readonly segments: Map<number, Segment>,
    private readonly keydir: KeyDir,
    /** Hot entries by slot (OpenOptions.cacheBytes); null when there is none. */
    readonly cache: ValueCache | null,
  ) {}

  /** A live slot's version, value bytes and expiry, read from the index alone (stat). */
  statOf(slot: number): { version: number; bytes: number; expiresAt?: number } | undefined {
    if (slot < 0) return undefined
    const s = this.keydir.slots
    const version = s.version[slot]!
    const bytes = s.len[slot]! - ENTRY_HEADER
    const exp = s.expires[slot]!
    return exp !== 0 ? { version, bytes, expiresAt: exp } : { version, bytes }
  }

  /** The entry bytes a live slot points at. */
  entryOf(slot: number): Buffer {
    const b = this.cache?.get(slot)
    if (b !== undefined) return b
    const s = this.keydir.slots
    return this.readEntry(s.seg[slot]!, s.off[slot]!, s.len[slot]!)
  }

  /**
   * The value a live slot points at. The cache is keyed by slot: an entry is dropped when
   * its slot is pointed elsewhere or freed, and compaction moves a slot only to a copy of the
   * same bytes. With `keep` false (a scan) a hit stays where it is and a miss is not cached,
   * so a walk over many keys read once does not push out what is read often.
   */
  readValue(slot: number, keep = true): unknown {
    const cache = this.cache
    let b = cache === null ? undefined : keep ? cache.get(slot) : cache.peek(slot)
    if (b !== undefined) {
      this.counters.cacheHits++
      return decodeValue(entryFlags(b, 0), b, entryValueAt(b, 0), b.length)
    }
    const s = this.keydir.slots
    b = this.readEntry(s.seg[slot]!, s.off[slot]!, s.len[slot]!)
    if (cache) {
      this.counters.cacheMisses++
      if (keep) cache.set(slot, b, 0, b.length)
    }
    // The bytes just read are this read's own: raw bytes are given as they are, not copied.
    return decodeValue(entryFlags(b, 0), b, entryValueAt(b, 0), b.length, true)
  }

  /** The entry's bytes, checked against its checksum: damage is named, never returned. */
  readEntry(segId: number, off: number, len: number): Buffer {
    const seg = this.segments.get(segId)
    if (!seg) throw new EngineError('CORRUPT', `segment ${segId} is missing`)
    const b = Buffer.allocUnsafe(len)
    const got = io.readSync(seg.fd, b, 0, len, off)
    if (got !== len || checkEntry(b, 0, len) !== len) {
      this.counters.corruptReads++
      throw new EngineError(
        'CORRUPT',
        `${path.basename(seg.file)}: damaged record at offset ${off}; run \`cairn repair --data ${this.dir}\` to keep every intact record`,
      )
    }
    return b
  }
}
