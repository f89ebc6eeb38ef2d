// One namespace's recent changes, oldest first, kept as bytes rather than objects. A busy
// namespace holds 10,000 changes; as objects (a change, its key, a Buffer per value) each
// write's change outlived the young generation and was copied on every scavenge until it
// was promoted, a large part of what a durable PUT cost in garbage collection. Here a change
// is a row of typed arrays (version, expiry, kind, where its bytes are) and its key, value and
// metadata are copied into chunks of bytes; objects are made only when history is read.
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

const FIRST_ROWS = 16
const MIN_CHUNK = 4 * 1024
const MAX_CHUNK = 1024 * 1024
/** A change's bytes beyond its key, value and metadata: its row, and a share of a chunk. */
export const ROW_OVERHEAD = 48

interface Chunk {
  buf: Buffer
  used: number
  /** Rows whose bytes are here: the chunk goes when the last of them does. */
  rows: number
}

export class FeedRing {
  /** The ring holds every change after this version. */
  floor: number
  /** What the ring is charged for its changes (bytes plus ROW_OVERHEAD each). */
  bytes = 0
  private head = 0
  private count = 0
  private version = new Float64Array(FIRST_ROWS)
  private expires = new Float64Array(FIRST_ROWS)
  /** 0 for a put, 1 for a delete. */
  private kind = new Uint8Array(FIRST_ROWS)
  private chunk = new Uint32Array(FIRST_ROWS)
  private off = new Uint32Array(FIRST_ROWS)
  private keyLen = new Uint32Array(FIRST_ROWS)
  private valueLen = new Uint32Array(FIRST_ROWS)
  /** -1 when the change has no metadata. */
  private metaLen = new Int32Array(FIRST_ROWS)
  private chunks = new Map<number, Chunk>()
  private current = -1

  constructor(floor: number) {
    this.floor = floor
  }

  get length(): number {
    return this.count
  }

  /** Adds the newest change; returns what it is charged. */
  push(c: RingInput): number {
    this.room()
    return this.fill((this.head + this.count++) & (this.version.length - 1), c)
  }

  /** Puts older changes, oldest first, in front of the ring; returns what they are charged. */
  prepend(older: RingInput[]): number {
    let charged = 0
    for (let i = older.length - 1; i >= 0; i--) {
      this.room()
      this.head = (this.head - 1) & (this.version.length - 1)
      this.count++
      charged += this.fill(this.head, older[i]!)
    }
    return charged
  }

  /** Drops the oldest change, which becomes the floor; returns what it was charged. */
  dropOldest(): number {
    const r = this.head
    const size = ROW_OVERHEAD + this.keyLen[r]! + this.valueLen[r]! + Math.max(0, this.metaLen[r]!)
    this.floor = this.version[r]!
    const id = this.chunk[r]!
    const ch = this.chunks.get(id)!
    if (--ch.rows === 0 && id !== this.current) this.chunks.delete(id)
    this.head = (this.head + 1) & (this.version.length - 1)
    this.count--
    this.bytes -= size
    return size
  }

  /** Up to `limit` changes after version `since`, oldest first. */
  read(since: number, limit: number): Change[] {
    const mask = this.version.length - 1
    // Versions rise along the ring, with gaps where writes failed: search, then walk.
    let lo = 0
    let hi = this.count
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (this.version[(this.head + mid) & mask]! <= since) lo = mid + 1
      else hi = mid
    }
    const out: Change[] = []
    for (let i = lo; i < this.count && out.length < limit; i++)
      out.push(this.row((this.head + i) & mask))
    return out
  }

  private row(r: number): Change {
    const buf = this.chunks.get(this.chunk[r]!)!.buf
    const at = this.off[r]!
    const keyEnd = at + this.keyLen[r]!
    const key = buf.toString('utf8', at, keyEnd)
    if (this.kind[r] === 1) return { type: 'delete', key, version: this.version[r]! }
    const valueEnd = keyEnd + this.valueLen[r]!
    const c: Change = {
      type: 'put',
      key,
      version: this.version[r]!,
      value: buf.subarray(keyEnd, valueEnd),
    }
    if (this.expires[r] !== 0) c.expiresAt = this.expires[r]!
    if (this.metaLen[r]! >= 0) c.metadata = buf.subarray(valueEnd, valueEnd + this.metaLen[r]!)
    return c
  }

  private fill(r: number, c: RingInput): number {
    const keyLen = Buffer.byteLength(c.key)
    const valueLen = c.value?.length ?? 0
    const metaLen = c.metadata === undefined ? -1 : c.metadata.length
    const len = keyLen + valueLen + Math.max(0, metaLen)
    const id = this.space(len)
    const ch = this.chunks.get(id)!
    const at = ch.used
    ch.buf.write(c.key, at, keyLen, 'utf8')
    c.value?.copy(ch.buf, at + keyLen)
    c.metadata?.copy(ch.buf, at + keyLen + valueLen)
    ch.used += len
    ch.rows++
    this.version[r] = c.version
    this.expires[r] = c.expiresAt ?? 0
    this.kind[r] = c.type === 'delete' ? 1 : 0
    this.chunk[r] = id
    this.off[r] = at
    this.keyLen[r] = keyLen
    this.valueLen[r] = valueLen
    this.metaLen[r] = metaLen
    const size = ROW_OVERHEAD + len
    this.bytes += size
    return size
  }

  /** The chunk `len` more bytes go into: the current one, or a new one sized to the ring. */
  private space(len: number): number {
    const cur = this.chunks.get(this.current)
    if (cur !== undefined && cur.buf.length - cur.used >= len) return this.current
    // A full chunk nothing points at any more goes now; the others when their last row does.
    if (cur !== undefined && cur.rows === 0) this.chunks.delete(this.current)
    const size = Math.max(len, Math.min(MAX_CHUNK, Math.max(MIN_CHUNK, this.bytes >>> 3)))
    this.current++
    this.chunks.set(this.current, { buf: Buffer.allocUnsafeSlow(size), used: 0, rows: 0 })
    return this.current
  }

  /** Makes room for one more row, doubling the rows kept in order from the oldest. */
  private room(): void {
    if (this.count < this.version.length) return
    const h = this.head
    this.version = unrolled(this.version, h)
    this.expires = unrolled(this.expires, h)
    this.kind = unrolled(this.kind, h)
    this.chunk = unrolled(this.chunk, h)
    this.off = unrolled(this.off, h)
    this.keyLen = unrolled(this.keyLen, h)
    this.valueLen = unrolled(this.valueLen, h)
    this.metaLen = unrolled(this.metaLen, h)
    this.head = 0
  }
}

/** A full ring's column twice as long, its rows from `head` on moved to the front. */
function unrolled<T extends Float64Array | Uint32Array | Int32Array | Uint8Array>(
  a: T,
  head: number,
): T {
  const b = new (a.constructor as new (n: number) => T)(a.length * 2)
  b.set(a.subarray(head))
  b.set(a.subarray(0, head), a.length - head)
  return b
}
