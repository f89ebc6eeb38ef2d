// The cache of hot entries: what was just written and what was recently read. Entries are
// copied into a ring of 1 MiB slabs and found by index slot, so caching one costs a copy
// and a few typed-array writes: no object, no Buffer, nothing for the garbage collector per
// entry (a Buffer per cached value costs more than the write it caches). When the ring comes
// round, the oldest slab is reused and everything in it is forgotten at once; an entry read
// from the older half of the ring is copied forward, so what is read often stays.
import { grown } from './typed.js'

const SLAB = 1024 * 1024
/** Larger entries are not cached: one would crowd out thousands of small ones. */
const MAX_ENTRY = SLAB / 8

export class ValueCache {
  private slabs: (Buffer | undefined)[]
  private gen: Uint32Array
  private cur = 0
  private at = 0
  private slotSlab = new Int32Array(1024).fill(-1)
  private slotGen = new Uint32Array(1024)
  private slotOff = new Uint32Array(1024)
  private slotLen = new Uint32Array(1024)

  constructor(bytes: number) {
    const n = Math.max(2, Math.floor(bytes / SLAB))
    this.slabs = new Array(n)
    this.gen = new Uint32Array(n)
  }

  /** Copies src[start, start + len) in as the entry of `slot`. */
  set(slot: number, src: Uint8Array, start: number, len: number): void {
    if (len > MAX_ENTRY) {
      this.delete(slot)
      return
    }
    if (slot >= this.slotSlab.length) this.grow(slot)
    if (this.at + len > SLAB || this.slabs[this.cur] === undefined) this.advance()
    const slab = this.slabs[this.cur]!
    slab.set(src.subarray(start, start + len), this.at)
    this.slotSlab[slot] = this.cur
    this.slotGen[slot] = this.gen[this.cur]!
    this.slotOff[slot] = this.at
    this.slotLen[slot] = len
    this.at += len
  }

  /** The slot's cached entry (a view, valid until the next set), or undefined. */
  get(slot: number): Buffer | undefined {
    const s = this.slabOf(slot)
    if (s < 0) return undefined
    const off = this.slotOff[slot]!
    const len = this.slotLen[slot]!
    const slab = this.slabs[s]!
    const n = this.slabs.length
    if ((this.cur - s + n) % n >= n >> 1) {
      // Old and still wanted: copy it forward before its slab is reused.
      this.set(slot, slab, off, len)
      return this.slabs[this.cur]!.subarray(this.at - len, this.at)
    }
    return slab.subarray(off, off + len)
  }

  /** get() that leaves the entry where it is, old or not (a scan's read). */
  peek(slot: number): Buffer | undefined {
    const s = this.slabOf(slot)
    if (s < 0) return undefined
    const off = this.slotOff[slot]!
    return this.slabs[s]!.subarray(off, off + this.slotLen[slot]!)
  }

  /** The slab holding the slot's entry, -1 when none does. */
  private slabOf(slot: number): number {
    if (slot >= this.slotSlab.length) return -1
    const s = this.slotSlab[slot]!
    return s < 0 || this.slotGen[slot] !== this.gen[s] ? -1 : s
  }

  delete(slot: number): void {
    if (slot < this.slotSlab.length) this.slotSlab[slot] = -1
  }

  private advance(): void {
    if (this.slabs[this.cur] !== undefined) this.cur = (this.cur + 1) % this.slabs.length
    this.slabs[this.cur] ??= Buffer.allocUnsafe(SLAB)
    this.gen[this.cur]!++
    this.at = 0
  }

  private grow(slot: number): void {
    let n = this.slotSlab.length
    while (n <= slot) n *= 2
    this.slotSlab = grown(this.slotSlab, n, -1)
    this.slotGen = grown(this.slotGen, n)
    this.slotOff = grown(this.slotOff, n)
    this.slotLen = grown(this.slotLen, n)
  }
}
