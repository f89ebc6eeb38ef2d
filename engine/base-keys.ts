// The keys a namespace had when it was opened from a checkpoint (checkpoint.ts), kept as the
// checkpoint holds them: UTF-8 bytes in sorted order in one buffer, an end offset and a slot
// each, and a hash table of their positions. A key costs its bytes and 16 more, against the
// 70 or so of a JavaScript string and a Map entry (keymap.ts holds the keys written since).
// Nothing is ever inserted: a key removed is marked GONE, and a key written again keeps its
// slot here, so positions never move and a walk can hold on to one.
import { LRUCache } from 'lru-cache'
import { compareKeys, isWellFormed } from './utf8.js'
import { SLICE_MS, yieldToRequests } from './yield.js'

/** Keys decoded together and cached as strings for listings: 64 a block. */
const BLOCK_BITS = 6
const BLOCK = 1 << BLOCK_BITS
const BLOCK_MASK = BLOCK - 1
/**
 * The decoded blocks of every base in the process, by base id and block: at most 4,096
 * blocks, some 262,144 keys, about 12 MiB of strings at 13-byte keys.
 */
const decoded = new LRUCache<number, string[]>({ max: 4096 })
let nextId = 1

/** Bases up to this many keys are hashed while opening. */
const HASH_NOW = 65_536

/** A block whose keys JSON carries as they are, and one with a byte JSON must escape. */
const PLAIN = 1
const ESCAPED = 2

/** Whether JSON must escape a byte of a key's UTF-8: a control character, a quote, a backslash. */
const escaped = (c: number): boolean => c < 0x20 || c === 0x22 || c === 0x5c

/** findAscii's answer for a key with a character past ASCII. */
const NOT_ASCII = -2

/** A key that was removed since the open. */
export const GONE = 0xffffffff

type Utf8Buffer = Buffer & { utf8Slice(start: number, end: number): string }

/** FNV-1a over bytes: cheap, and spreads short keys that differ in their last bytes. */
function hashBytes(b: Buffer, s: number, e: number): number {
  let h = 0x811c9dc5
  for (let i = s; i < e; i++) h = Math.imul(h ^ b[i]!, 0x01000193)
  return h >>> 0
}

export class BaseKeys {
  /** Names the base's blocks in the shared cache. */
  private readonly id = nextId++
  /** Entries not removed. */
  live: number
  /**
   * Positions + 1 by hash, 0 for none; linear probing, at most half full. Null until made:
   * lookups bisect the sorted keys meanwhile.
   */
  private table: Int32Array | null = null
  private mask = 0
  /** The key being looked for, as UTF-8. */
  private scratch = Buffer.allocUnsafe(1024)
  private scratchLen = 0
  /** Per block: 0 not looked at yet, PLAIN or ESCAPED (plainBlock). */
  private readonly plain: Uint8Array
  /** Settles when the hash table is made (or its making stopped at close). */
  hashed: Promise<void> = Promise.resolve()

  constructor(
    readonly blob: Buffer,
    /** Where the first key starts in blob. */
    readonly start: number,
    /** End offset in blob of each key. */
    readonly ends: Uint32Array,
    /** Each key's slot, GONE once removed. */
    readonly slots: Uint32Array,
  ) {
    let live = 0
    for (let i = 0; i < slots.length; i++) if (slots[i] !== GONE) live++
    this.live = live
    this.plain = new Uint8Array((slots.length + BLOCK - 1) >>> BLOCK_BITS)
  }

  /**
   * Makes the hash table: at once for a small base, else in slices between requests, since
   * a million keys take a tenth of a second (each insert a cache miss) that an open need not
   * wait for. Resolves when lookups use it.
   */
  async hash(closed: () => boolean): Promise<void> {
    let cap = 16
    while (cap < this.count * 2) cap *= 2
    const t = new Int32Array(cap)
    const mask = cap - 1
    const { blob, ends } = this
    const now = this.count <= HASH_NOW
    let s = this.start
    for (let i = 0; i < ends.length; ) {
      const began = performance.now()
      do {
        const stop = Math.min(ends.length, i + 1024)
        for (; i < stop; i++) {
          const e = ends[i]!
          let h = hashBytes(blob, s, e) & mask
          while (t[h] !== 0) h = (h + 1) & mask
          t[h] = i + 1
          s = e
        }
      } while (i < ends.length && (now || performance.now() - began < SLICE_MS))
      if (i < ends.length) {
        await yieldToRequests(performance.now() - began)
        if (closed()) return
      }
    }
    this.mask = mask
    this.table = t
  }

  get count(): number {
    return this.slots.length
  }

  keyStart(i: number): number {
    return i === 0 ? this.start : this.ends[i - 1]!
  }

  /** Key i as a string. */
  keyAt(i: number): string {
    return (this.blob as Utf8Buffer).utf8Slice(this.keyStart(i), this.ends[i]!)
  }

  /** Puts `key` in scratch as UTF-8. */
  private encode(key: string): void {
    if (key.length * 3 > this.scratch.length) this.scratch = Buffer.allocUnsafe(key.length * 3)
    this.scratchLen = this.scratch.write(key, 0, 'utf8')
  }

  /** Position of the key (removed or not), or -1. */
  find(key: string): number {
    if (this.table !== null) {
      const p = this.findAscii(key)
      if (p !== NOT_ASCII) return p
    }
    this.encode(key)
    // A lone surrogate has no UTF-8 form (Buffer.write makes it U+FFFD's bytes): no key
    // stored holds one (db.ts refuses them), so none matches.
    if (this.scratchLen !== key.length && !isWellFormed(key)) return -1
    const t = this.table
    if (t === null) {
      const p = this.lowerBound(false)
      return p < this.count && this.cmp(p) === 0 ? p : -1
    }
    const k = this.scratch
    const n = this.scratchLen
    const b = this.blob
    for (let h = hashBytes(k, 0, n) & this.mask; ; h = (h + 1) & this.mask) {
      const p = t[h]! - 1
      if (p < 0) return -1
      const s = this.keyStart(p)
      if (this.ends[p]! - s !== n) continue
      let j = 0
      while (j < n && b[s + j] === k[j]) j++
      if (j === n) return p
    }
  }

  /**
   * find() for a key of ASCII only, hashed and compared by its char codes (its UTF-8 bytes)
   * with no copy into scratch: a GET's lookup, which the copy (a call into the runtime) made
   * twice as slow as a Map's. NOT_ASCII for any other key.
   */
  private findAscii(key: string): number {
    const n = key.length
    let h = 0x811c9dc5
    for (let i = 0; i < n; i++) {
      const c = key.charCodeAt(i)
      if (c >= 0x80) return NOT_ASCII
      h = Math.imul(h ^ c, 0x01000193)
    }
    const t = this.table!
    const b = this.blob
    for (h = (h >>> 0) & this.mask; ; h = (h + 1) & this.mask) {
      const p = t[h]! - 1
      if (p < 0) return -1
      const s = this.keyStart(p)
      if (this.ends[p]! - s !== n) continue
      let j = 0
      while (j < n && b[s + j] === key.charCodeAt(j)) j++
      if (j === n) return p
    }
  }

  get(key: string): number | undefined {
    const i = this.find(key)
    if (i < 0) return undefined
    const slot = this.slots[i]!
    return slot === GONE ? undefined : slot
  }

  /**
   * Points a key of this base at `slot`, or marks it gone for undefined; false when the base
   * does not hold the key (fold.ts).
   */
  place(key: string, slot: number | undefined): boolean {
    const i = this.find(key)
    if (i < 0) return false
    const was = this.slots[i] !== GONE
    const now = slot !== undefined
    this.slots[i] = now ? slot : GONE
    this.live += (now ? 1 : 0) - (was ? 1 : 0)
    return true
  }

  /** Forgets the key; true when it was here. */
  kill(key: string): boolean {
    const i = this.find(key)
    if (i < 0 || this.slots[i] === GONE) return false
    this.slots[i] = GONE
    this.live--
    return true
  }

  /** Compares key i with scratch as bytes: UTF-8 byte order is the order kept. */
  private cmp(i: number): number {
    const b = this.blob
    const k = this.scratch
    const n = this.scratchLen
    const s = this.keyStart(i)
    const e = this.ends[i]!
    const m = Math.min(e - s, n)
    for (let j = 0; j < m; j++) {
      const c = b[s + j]! - k[j]!
      if (c !== 0) return c
    }
    return e - s - n
  }

  /** The first position whose key is >= key (strict: > key). */
  seek(key: string, strict: boolean): number {
    this.encode(key)
    return this.lowerBound(strict)
  }

  /** seek for the key in scratch, among positions [lo, hi). */
  private lowerBound(strict: boolean, lo = 0, hi = this.count): number {
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      const c = this.cmp(mid)
      if (c < 0 || (strict && c === 0)) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  /** The positions [lo, hi) of the keys that start with `prefix`. */
  prefixRange(prefix: string): [number, number] {
    if (prefix === '') return [0, this.count]
    this.encode(prefix)
    const lo = this.lowerBound(false)
    // The keys with the prefix end where the next prefix of the same length would begin:
    // the prefix with its last byte one higher (UTF-8 has no 0xFF byte to carry from).
    this.scratch[this.scratchLen - 1]!++
    // Found by galloping from lo: a prefix holds few keys as a rule, and the steps then stay
    // within the few cache lines a listing reads anyway, where a bisection of the whole base
    // would miss the cache at each of its twenty steps.
    let from = lo
    let step = 64
    let to = lo + step
    while (to < this.count && this.cmp(to) < 0) {
      from = to + 1
      step *= 2
      to = lo + step
    }
    return [lo, this.lowerBound(false, from, Math.min(to, this.count))]
  }

  /**
   * Appends to `out` the positions of the live keys from position `i`, stepping `step`, inside
   * [lo, hi), until `out` holds `want`. A key whose expiry (by slot, in `expires`) is at or
   * before `now` is passed over; `now` 0 passes over none.
   */
  collect(
    i: number,
    step: 1 | -1,
    lo: number,
    hi: number,
    want: number,
    out: number[],
    expires: Float64Array,
    now: number,
  ): void {
    const slots = this.slots
    for (; i >= lo && i < hi && out.length < want; i += step) {
      const slot = slots[i]!
      if (slot === GONE) continue
      if (now !== 0) {
        const e = expires[slot]!
        if (e !== 0 && e <= now) continue
      }
      out.push(i)
    }
  }

  /** The keys at `positions`, as strings (decoded a block at a time, and cached). */
  keysAt(positions: number[]): string[] {
    const out = new Array<string>(positions.length)
    let block = -1
    let keys: string[] = []
    for (let j = 0; j < positions.length; j++) {
      const i = positions[j]!
      if (i >>> BLOCK_BITS !== block) {
        block = i >>> BLOCK_BITS
        keys = this.block(block)
      }
      out[j] = keys[i & BLOCK_MASK]!
    }
    return out
  }

  /**
   * The keys at `positions` as the UTF-8 text of a JSON array of strings, copied from the
   * base's bytes: no string is made. Undefined when a key holds a byte JSON must escape (a
   * quote, a backslash, a control character), which JSON.stringify then does. Keys are
   * well-formed UTF-8, so every other byte goes as it is.
   */
  json(positions: number[]): Buffer | undefined {
    const blob = this.blob
    const ends = this.ends
    const n = positions.length
    if (n === 0) return Buffer.from('[]')
    // Positions in a row (a listing's rule) hold their keys' bytes in a row.
    const first = positions[0]!
    const last = positions[n - 1]!
    let size = 1 + 3 * n
    if (last - first === n - 1) size += ends[last]! - this.keyStart(first)
    else for (let j = 0; j < n; j++) size += ends[positions[j]!]! - this.keyStart(positions[j]!)
    const out = Buffer.allocUnsafe(size)
    let o = 0
    let k = this.keyStart(first)
    let block = -1
    let plain = true
    for (let j = 0; j < n; j++) {
      const i = positions[j]!
      out[o++] = j === 0 ? 0x5b : 0x2c
      out[o++] = 0x22
      if (j > 0 && i !== positions[j - 1]! + 1) k = this.keyStart(i)
      if (i >>> BLOCK_BITS !== block) {
        block = i >>> BLOCK_BITS
        plain = this.plainBlock(block)
      }
      const end = ends[i]!
      if (plain) for (; k < end; k++) out[o++] = blob[k]!
      else
        for (; k < end; k++) {
          const c = blob[k]!
          if (escaped(c)) return undefined
          out[o++] = c
        }
      out[o++] = 0x22
    }
    out[o] = 0x5d
    return out
  }

  /**
   * Whether no key of block b holds a byte JSON must escape. Looked at once a block, on its
   * first listing, so the copy of its keys is a plain loop over their bytes; the keys of a
   * block with such a byte are looked at one by one as they are copied.
   */
  private plainBlock(b: number): boolean {
    let p = this.plain[b]!
    if (p === 0) {
      const blob = this.blob
      const last = this.ends[Math.min(this.count, (b + 1) << BLOCK_BITS) - 1]!
      p = PLAIN
      for (let k = this.keyStart(b << BLOCK_BITS); k < last; k++) {
        if (escaped(blob[k]!)) {
          p = ESCAPED
          break
        }
      }
      this.plain[b] = p
    }
    return p === PLAIN
  }

  /**
   * Block b's keys as strings, from the cache shared by every base or decoded now. A listing
   * must hand out strings, and making a hundred of them cost a listing four times what the
   * rest did; a base's bytes never change, so the strings of the blocks listed most stay
   * made, within the cache's bound.
   */
  private block(b: number): string[] {
    const id = this.id * 2 ** 26 + b
    let keys = decoded.get(id)
    if (keys !== undefined) return keys
    const from = b << BLOCK_BITS
    const to = Math.min(this.count, from + BLOCK)
    keys = new Array<string>(to - from)
    // One decode of the block's bytes, cut at the key offsets when it is ASCII (then bytes and
    // UTF-16 units line up): a call into the runtime per key costs more than the cut.
    const first = this.keyStart(from)
    const last = this.ends[to - 1]!
    const span = (this.blob as Utf8Buffer).utf8Slice(first, last)
    const ascii = span.length === last - first
    for (let i = from; i < to; i++)
      keys[i - from] = ascii
        ? span.slice(this.keyStart(i) - first, this.ends[i]! - first)
        : this.keyAt(i)
    decoded.set(id, keys)
    return keys
  }
}

/** Merges two key lists sorted in `step`'s direction into one, in that direction. */
export function mergeKeys(a: string[], b: string[], step: 1 | -1): string[] {
  if (b.length === 0) return a
  if (a.length === 0) return b
  const out: string[] = []
  let i = 0
  let j = 0
  while (i < a.length && j < b.length)
    out.push(compareKeys(a[i]!, b[j]!) * step < 0 ? a[i++]! : b[j++]!)
  while (i < a.length) out.push(a[i++]!)
  while (j < b.length) out.push(b[j++]!)
  return out
}
