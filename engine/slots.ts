import { grown } from './typed.js'

/**
 * Where each live key's newest record is, in parallel typed arrays rather than one object
 * per key: a slot number indexes them all. Freed slots are reused.
 */
export class Slots {
  seg = new Uint32Array(1024)
  off = new Uint32Array(1024)
  len = new Uint32Array(1024)
  version = new Float64Array(1024)
  /** 0 when the key never expires. */
  expires = new Float64Array(1024)
  private free: number[] = []
  private used = 0

  alloc(): number {
    const f = this.free.pop()
    if (f !== undefined) return f
    if (this.used === this.seg.length) this.grow()
    return this.used++
  }

  /**
   * Fills slots 0..n-1 from columns (an open from a checkpoint); only into empty Slots. Each
   * column is copied whole, which costs a memcpy, not a loop.
   */
  load(
    n: number,
    seg: Uint32Array,
    off: Uint32Array,
    len: Uint32Array,
    version: Float64Array,
    expires: Float64Array,
  ): void {
    if (this.used !== 0) throw new Error('Slots.load into a used Slots')
    let cap = 1024
    while (cap < n) cap *= 2
    this.seg = new Uint32Array(cap)
    this.off = new Uint32Array(cap)
    this.len = new Uint32Array(cap)
    this.version = new Float64Array(cap)
    this.expires = new Float64Array(cap)
    this.seg.set(seg.subarray(0, n))
    this.off.set(off.subarray(0, n))
    this.len.set(len.subarray(0, n))
    this.version.set(version.subarray(0, n))
    this.expires.set(expires.subarray(0, n))
    this.used = n
  }

  /** Segment ids start at 1, so a freed slot's 0 never matches a segment. */
  release(slot: number): void {
    this.seg[slot] = 0
    this.free.push(slot)
  }

  /** Slots handed out so far, free ones included: every slot number is below this. */
  get highWater(): number {
    return this.used
  }

  /** Bytes held by the arrays, for memory figures. */
  bytes(): number {
    return this.seg.length * 28 + this.free.length * 8
  }

  private grow(): void {
    const n = this.seg.length * 2
    this.seg = grown(this.seg, n)
    this.off = grown(this.off, n)
    this.len = grown(this.len, n)
    this.version = grown(this.version, n)
    this.expires = grown(this.expires, n)
  }
}
