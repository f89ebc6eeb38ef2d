import { grown } from './typed.js'

/**
 * Where each live key's newest record is, in parallel typed arrays rather than one object
 * per key: a slot number indexes them all. Freed slots are reused.
 */
export class Slots {
  seg: Uint32Array = new Uint32Array(1024)
  off: Uint32Array = new Uint32Array(1024)
  len: Uint32Array = new Uint32Array(1024)
  version: Float64Array = new Float64Array(1024)
  /** 0 when the key never expires. */
  expires: Float64Array = new Float64Array(1024)
  private free: number[] = []
  private used = 0

  alloc(): number {
    const f = this.free.pop()
    if (f !== undefined) return f
    if (this.used === this.seg.length) this.grow()
    return this.used++
  }

  /** The room Slots keeps for n slots: arrays are sized in powers of two. */
  static capacityFor(n: number): number {
    let cap = 1024
    while (cap < n) cap *= 2
    return cap
  }

  /**
   * Takes columns holding slots 0..n-1 as its own (an open from a checkpoint, which reads
   * them at capacityFor(n)); only into empty Slots.
   */
  adopt(
    n: number,
    seg: Uint32Array,
    off: Uint32Array,
    len: Uint32Array,
    version: Float64Array,
    expires: Float64Array,
  ): void {
    if (this.used !== 0) throw new Error('Slots.adopt into a used Slots')
    const cap = seg.length
    for (const col of [seg, off, len, version, expires])
      if (col.length !== cap || cap < n || cap === 0) throw new Error('Slots.adopt: bad columns')
    this.seg = seg
    this.off = off
    this.len = len
    this.version = version
    this.expires = expires
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
