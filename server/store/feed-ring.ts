// One namespace's recent changes, oldest first, kept as bytes rather than objects. A busy
// namespace holds 10,000 changes; as objects (a change, its key, a Buffer per value) each
// write's change outlived the young generation and was copied on every scavenge until it
// was promoted, a large part of what a durable PUT cost in garbage collection. Here a change
// is a fixed-size row in one buffer (version, expiry, kind, where its bytes are) and its key,
// value and metadata are copied into chunks of bytes; objects are made only when history is
// read. A ring starts small (one change in a few hundred bytes), since most namespaces of a
// hosted service change rarely, and every ring a process has seen keeps at least one.
import type { Change } from './types.js'

/** What a change is made of, as it is kept. */
export interface RingInput {
  type: 'put' | 'delete'
  key: string
  version: number
  value?: Buffer
  metadata?: Buffer
  expiresAt?: number
}

/**
 * A row: version f64 @0, expiry f64 @8 (0 for none), chunk u32 @16, offset u32 @20, key
 * length u32 @24, value length u32 @28, metadata length i32 @32 (-1 for none), kind u8 @36
 * (0 put, 1 delete), 3 bytes unused.
 */
const ROW = 40
const FIRST_ROWS = 4
const MIN_CHUNK = 256
const MAX_CHUNK = 1024 * 1024
/** What a change is charged beyond its key, value and metadata, towards the history's bound. */
export const ROW_OVERHEAD = ROW
/**
 * The ring's own objects (the ring, its buffers' headers, its chunk map), roughly: 50,000
 * rings of one small change each measured about 780 B of heap and 420 B of buffers apiece.
 */
const RING_OBJECTS = 1024

interface Chunk {
  buf: Buffer
  used: number
  /** Rows whose bytes are here: the chunk goes when the last of them does. */
  rows: number
}

export class FeedRing {
  /** The ring holds every change after this version. */
  floor: number
  /** What its changes are charged: their bytes plus ROW_OVERHEAD each (the history's bound). */
  bytes = 0
  /** Memory the ring holds: rows and chunks at their capacity, and its objects. */
  memory = RING_OBJECTS + FIRST_ROWS * ROW
  /** When a watch last read from it (ms since the epoch; shedding spares it a while). */
  readAt = 0
  private head = 0
  private count = 0
  private rows = Buffer.alloc(FIRST_ROWS * ROW)
  private chunks = new Map<number, Chunk>()
  private current = -1

  constructor(floor: number) {
    this.floor = floor
  }

  get length(): number {
    return this.count
  }

  private get capacity(): number {
    return this.rows.length / ROW
  }

  /** Adds the newest change. */
  push(c: RingInput): void {
    this.room()
    this.fill((this.head + this.count++) % this.capacity, c)
  }

  /** Puts older changes, oldest first, in front of the ring. */
  prepend(older: RingInput[]): void {
    for (let i = older.length - 1; i >= 0; i--) {
      this.room()
      this.head = (this.head - 1 + this.capacity) % this.capacity
      this.count++
      this.fill(this.head, older[i]!)
    }
  }

  /** Drops the oldest change, which becomes the floor. */
  dropOldest(): void {
    const at = this.head * ROW
    const r = this.rows
    this.bytes -= ROW_OVERHEAD + this.contentOf(at)
    this.floor = r.readDoubleLE(at)
    const id = r.readUInt32LE(at + 16)
    const ch = this.chunks.get(id)!
    // The current chunk too: once nothing points into it, the next change starts a new one
    // sized to what the ring holds then.
    if (--ch.rows === 0) this.free(id, ch)
    this.head = (this.head + 1) % this.capacity
    this.count--
    if (this.count * 4 <= this.capacity && this.capacity > FIRST_ROWS * 4)
      this.resize(this.capacity / 2)
  }

  /** Up to `limit` changes after version `since`, oldest first. */
  read(since: number, limit: number): Change[] {
    const cap = this.capacity
    // Versions rise along the ring, with gaps where writes failed: search, then walk.
    let lo = 0
    let hi = this.count
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (this.rows.readDoubleLE(((this.head + mid) % cap) * ROW) <= since) lo = mid + 1
      else hi = mid
    }
    const out: Change[] = []
    for (let i = lo; i < this.count && out.length < limit; i++)
      out.push(this.change(((this.head + i) % cap) * ROW))
    return out
  }

  private contentOf(at: number): number {
    const r = this.rows
    return r.readUInt32LE(at + 24) + r.readUInt32LE(at + 28) + Math.max(0, r.readInt32LE(at + 32))
  }

  private change(at: number): Change {
    const r = this.rows
    const buf = this.chunks.get(r.readUInt32LE(at + 16))!.buf
    const from = r.readUInt32LE(at + 20)
    const keyEnd = from + r.readUInt32LE(at + 24)
    const key = buf.toString('utf8', from, keyEnd)
    const version = r.readDoubleLE(at)
    if (r[at + 36] === 1) return { type: 'delete', key, version }
    const valueEnd = keyEnd + r.readUInt32LE(at + 28)
    const c: Change = { type: 'put', key, version, value: buf.subarray(keyEnd, valueEnd) }
    const expires = r.readDoubleLE(at + 8)
    if (expires !== 0) c.expiresAt = expires
    const metaLen = r.readInt32LE(at + 32)
    if (metaLen >= 0) c.metadata = buf.subarray(valueEnd, valueEnd + metaLen)
    return c
  }

  private fill(row: number, c: RingInput): void {
    const keyLen = Buffer.byteLength(c.key)
    const valueLen = c.value?.length ?? 0
    const metaLen = c.metadata === undefined ? -1 : c.metadata.length
    const len = keyLen + valueLen + Math.max(0, metaLen)
    const id = this.space(len)
    const ch = this.chunks.get(id)!
    const from = ch.used
    ch.buf.write(c.key, from, keyLen, 'utf8')
    c.value?.copy(ch.buf, from + keyLen)
    c.metadata?.copy(ch.buf, from + keyLen + valueLen)
    ch.used += len
    ch.rows++
    const at = row * ROW
    const r = this.rows
    r.writeDoubleLE(c.version, at)
    r.writeDoubleLE(c.expiresAt ?? 0, at + 8)
    r.writeUInt32LE(id, at + 16)
    r.writeUInt32LE(from, at + 20)
    r.writeUInt32LE(keyLen, at + 24)
    r.writeUInt32LE(valueLen, at + 28)
    r.writeInt32LE(metaLen, at + 32)
    r[at + 36] = c.type === 'delete' ? 1 : 0
    this.bytes += ROW_OVERHEAD + len
  }

  /** The chunk `len` more bytes go into: the current one, or a new one sized to the ring. */
  private space(len: number): number {
    const cur = this.chunks.get(this.current)
    if (cur !== undefined && cur.buf.length - cur.used >= len) return this.current
    const size = Math.max(len, Math.min(MAX_CHUNK, Math.max(MIN_CHUNK, this.bytes >>> 3)))
    this.current++
    this.chunks.set(this.current, { buf: Buffer.allocUnsafeSlow(size), used: 0, rows: 0 })
    this.memory += size
    return this.current
  }

  private free(id: number, ch: Chunk): void {
    this.chunks.delete(id)
    this.memory -= ch.buf.length
  }

  /** Makes room for one more row, doubling the rows. */
  private room(): void {
    if (this.count === this.capacity) this.resize(this.capacity * 2)
  }

  /** Moves the rows, oldest first, into a buffer of `cap` rows. */
  private resize(cap: number): void {
    const rows = Buffer.alloc(cap * ROW)
    const old = this.capacity
    for (let i = 0; i < this.count; i++) {
      const from = ((this.head + i) % old) * ROW
      this.rows.copy(rows, i * ROW, from, from + ROW)
    }
    this.memory += (cap - old) * ROW
    this.rows = rows
    this.head = 0
  }
}
