// A walk of one namespace's keys in UTF-8 byte order into flat columns, as a checkpoint
// writes them and as a fold makes a new base of them (checkpoint.ts, fold.ts). It runs in
// slices while writes go on; what it may miss or take twice is the caller's to settle (a
// checkpoint by the log replayed after it, a fold by the keys noted in Namespace.moved).
import { GONE } from './base-keys.js'
import type { Namespace } from './parts.js'
import type { Slots } from './slots.js'
import { grown } from './typed.js'

/** Keys the walk takes between looks at the clock. */
const PAGE = 1024

/** One namespace's keys as a walk took them, in order, each with its slot. */
export interface WalkedKeys {
  blob: Buffer
  ends: Uint32Array
  slots: Uint32Array
}

/**
 * A growable set of columns, and each entry's slot (for a fold, not written). Without
 * `positions` only the keys and slots are kept: a fold needs no more, and a million keys'
 * positions would be 24 MiB held for nothing while it runs.
 */
export class Columns {
  n = 0
  version: Float64Array
  expires: Float64Array
  seg: Uint32Array
  off: Uint32Array
  len: Uint32Array
  ends: Uint32Array
  slot: Uint32Array
  blob: Buffer
  blobLen = 0

  constructor(
    cap: number,
    private readonly positions = true,
  ) {
    cap = Math.max(cap, 16)
    const pcap = positions ? cap : 0
    this.version = new Float64Array(pcap)
    this.expires = new Float64Array(pcap)
    this.seg = new Uint32Array(pcap)
    this.off = new Uint32Array(pcap)
    this.len = new Uint32Array(pcap)
    this.ends = new Uint32Array(cap)
    this.slot = new Uint32Array(cap)
    this.blob = Buffer.allocUnsafe(cap * 16)
  }

  push(key: string, slot: number, s: Slots): void {
    const i = this.row(slot, s, key.length * 3)
    this.blobLen += this.blob.write(key, this.blobLen, 'utf8')
    this.ends[i] = this.blobLen
  }

  /** The same for a key of a base: its UTF-8 bytes, blob[from, to). */
  pushBytes(blob: Buffer, from: number, to: number, slot: number, s: Slots): void {
    const len = to - from
    const i = this.row(slot, s, len)
    const out = this.blob
    // Keys are short: a loop beats a call into the runtime.
    for (let j = 0; j < len; j++) out[this.blobLen + j] = blob[from + j]!
    this.blobLen += len
    this.ends[i] = this.blobLen
  }

  /** A new entry with the slot's columns, and room for `keyBytes` more in the blob. */
  private row(slot: number, s: Slots, keyBytes: number): number {
    if (this.n === this.slot.length) this.grow()
    const i = this.n++
    if (this.positions) {
      this.seg[i] = s.seg[slot]!
      this.off[i] = s.off[slot]!
      this.len[i] = s.len[slot]!
      this.version[i] = s.version[slot]!
      this.expires[i] = s.expires[slot]!
    }
    this.slot[i] = slot
    if (this.blobLen + keyBytes > this.blob.length) {
      const b = Buffer.allocUnsafe(Math.max(this.blob.length * 2, this.blobLen + keyBytes))
      this.blob.copy(b, 0, 0, this.blobLen)
      this.blob = b
    }
    return i
  }

  /** Entries [first, first + count) as a fold takes them: keys, ends from 0, slots. */
  walked(first: number, count: number): WalkedKeys {
    const from = first === 0 ? 0 : this.ends[first - 1]!
    const to = count === 0 ? from : this.ends[first + count - 1]!
    const blob = Buffer.allocUnsafe(to - from)
    this.blob.copy(blob, 0, from, to)
    const ends = this.ends.slice(first, first + count)
    for (let i = 0; i < count; i++) ends[i]! -= from
    return { blob, ends, slots: this.slot.slice(first, first + count) }
  }

  /** Room for more entries than counted at the start (keys written during the walk). */
  private grow(): void {
    const cap = this.slot.length * 2
    if (this.positions) {
      this.version = grown(this.version, cap)
      this.expires = grown(this.expires, cap)
      this.seg = grown(this.seg, cap)
      this.off = grown(this.off, cap)
      this.len = grown(this.len, cap)
    }
    this.ends = grown(this.ends, cap)
    this.slot = grown(this.slot, cap)
  }
}

/**
 * Appends `n`'s keys to `cols`, each with its slot as it is when the walk meets it: from
 * `sorted` when given (a namespace whose sorted list is not in step), else from its base and
 * sorted list. `pace` is asked after every page, and the walk gives up (false) when it says
 * so; null walks at once, as at close.
 */
export async function walkKeys(
  n: Namespace,
  sorted: string[] | undefined,
  cols: Columns,
  s: Slots,
  pace: (() => Promise<boolean>) | null,
): Promise<boolean> {
  const base = sorted === undefined ? n.map.base : null
  let after: string | undefined
  let bi = 0
  for (let at = 0; ; at += PAGE) {
    if (base !== null && bi < base.count) {
      // The base's keys are copied as bytes, up to the next key of the sorted list (base
      // positions never move); then that key; no string is made for a key of the base.
      const next = n.keys.following(after, 1)[0]
      const upTo = next === undefined ? base.count : base.seek(next, false)
      if (bi < upTo) {
        const stop = Math.min(upTo, bi + PAGE)
        for (; bi < stop; bi++) {
          const slot = base.slots[bi]!
          if (slot !== GONE) cols.pushBytes(base.blob, base.keyStart(bi), base.ends[bi]!, slot, s)
        }
      } else {
        // A key that sorts before base keys already taken came in behind the walk: the
        // caller settles it, as it does any key added behind the walk.
        const slot = upTo === bi ? n.map.get(next!) : undefined
        if (slot !== undefined) cols.push(next!, slot, s)
        after = next
      }
    } else {
      // The sorted list's keys after the last taken (the base's are all taken by now).
      const keys = sorted ? sorted.slice(at, at + PAGE) : n.keys.following(after, PAGE)
      for (const key of keys) {
        const slot = n.map.get(key)
        if (slot !== undefined) cols.push(key, slot, s)
      }
      if (keys.length < PAGE) break
      after = keys[keys.length - 1]
    }
    if (pace !== null && !(await pace())) return false
  }
  return true
}
