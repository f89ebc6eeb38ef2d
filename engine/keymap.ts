// A namespace's key -> slot map. Mostly a plain Map; after an open from a checkpoint
// (checkpoint.ts) it may also hold a _base_: the checkpoint's keys, still as UTF-8 bytes in
// sorted order, each with its slot. Opening then costs a read and a copy of typed arrays
// instead of a string and a Map entry per key: lookups binary-search the base, and the keys
// move into the Map in the background, a slice at a time (migrate), which also yields the
// sorted key list for listings, already in order. Once every key has moved the base is gone
// and this is a Map again.
import { SortedKeys } from './sorted-keys.js'
import { hasHighUnits } from './utf8.js'

/** A base entry that has moved into the Map, or was removed. */
export const GONE = 0xffffffff

/** Sorted keys from a checkpoint: key i is blob[ends[i-1] (or start), ends[i]). */
export class BaseKeys {
  /** Entries before this index have moved into the Map (or are gone). */
  next = 0
  /** Entries not yet moved nor removed. */
  live: number
  private scratch = Buffer.allocUnsafe(2048)

  constructor(
    readonly blob: Buffer,
    /** Where the first key starts in blob. */
    readonly start: number,
    /** End offset in blob of each key. */
    readonly ends: Uint32Array,
    /** Each key's slot, GONE once moved or removed. */
    readonly slots: Uint32Array,
  ) {
    let live = 0
    for (let i = 0; i < slots.length; i++) if (slots[i] !== GONE) live++
    this.live = live
  }

  get count(): number {
    return this.slots.length
  }

  keyStart(i: number): number {
    return i === 0 ? this.start : this.ends[i - 1]!
  }

  /** Index of the key among those not yet moved, or -1. */
  find(key: string): number {
    if (key.length * 3 > this.scratch.length) this.scratch = Buffer.allocUnsafe(key.length * 3)
    const k = this.scratch
    const n = k.write(key, 0, 'utf8')
    const b = this.blob
    let lo = this.next
    let hi = this.slots.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      const s = this.keyStart(mid)
      const e = this.ends[mid]!
      // Compare blob[s, e) with k[0, n) as bytes: UTF-8 byte order is the order kept.
      let c = 0
      const m = Math.min(e - s, n)
      for (let j = 0; j < m; j++) {
        c = b[s + j]! - k[j]!
        if (c !== 0) break
      }
      if (c === 0) c = e - s - n
      if (c === 0) return mid
      if (c < 0) lo = mid + 1
      else hi = mid
    }
    return -1
  }

  get(key: string): number | undefined {
    const i = this.find(key)
    if (i < 0) return undefined
    const slot = this.slots[i]!
    return slot === GONE ? undefined : slot
  }

  /** Forgets the key; true when it was here. */
  kill(key: string): boolean {
    const i = this.find(key)
    if (i < 0 || this.slots[i] === GONE) return false
    this.slots[i] = GONE
    this.live--
    return true
  }
}

type Utf8Buffer = Buffer & {
  utf8Slice(start: number, end: number): string
}

export class KeyMap {
  private m = new Map<string, number>()
  base: BaseKeys | null = null

  get size(): number {
    return this.base === null ? this.m.size : this.m.size + this.base.live
  }

  get(key: string): number | undefined {
    const s = this.m.get(key)
    if (s !== undefined || this.base === null) return s
    return this.base.get(key)
  }

  has(key: string): boolean {
    return this.get(key) !== undefined
  }

  set(key: string, slot: number): this {
    if (this.base !== null && !this.m.has(key)) this.base.kill(key)
    this.m.set(key, slot)
    return this
  }

  delete(key: string): boolean {
    if (this.m.delete(key)) return true
    return this.base?.kill(key) === true
  }

  clear(): void {
    this.m.clear()
    this.base = null
  }

  *keys(): IterableIterator<string> {
    yield* this.m.keys()
    const b = this.base
    if (b === null) return
    for (let i = b.next; i < b.count; i++)
      if (b.slots[i] !== GONE) yield (b.blob as Utf8Buffer).utf8Slice(b.keyStart(i), b.ends[i]!)
  }

  *values(): IterableIterator<number> {
    yield* this.m.values()
    const b = this.base
    if (b === null) return
    for (let i = b.next; i < b.count; i++) if (b.slots[i] !== GONE) yield b.slots[i]!
  }

  /**
   * Moves up to `max` base keys into the Map, in order, appending each to `sorted`; returns
   * whether the base is used up (and then drops it). `wide` is set when a key holds a UTF-16
   * unit from U+D800 up (sorted-keys.ts).
   */
  migrate(max: number, sorted: string[], wide: { on: boolean }): boolean {
    const b = this.base
    if (b === null) return true
    const blob = b.blob as Utf8Buffer
    const stop = Math.min(b.count, b.next + max)
    let s = b.keyStart(b.next)
    for (let i = b.next; i < stop; i++) {
      const e = b.ends[i]!
      const slot = b.slots[i]!
      if (slot !== GONE) {
        const key = blob.utf8Slice(s, e)
        if (!wide.on && key.length !== e - s && hasHighUnits(key)) wide.on = true
        this.m.set(key, slot)
        sorted.push(key)
        b.slots[i] = GONE
        b.live--
      }
      s = e
    }
    b.next = stop
    if (stop < b.count) return false
    this.base = null
    return true
  }
}

/** The sorted list from keys moved in order, with the changes made meanwhile applied. */
export function finishSorted(
  sorted: string[],
  wide: boolean,
  changes: Map<string, true> | null,
  map: KeyMap,
): SortedKeys {
  const keys = SortedKeys.from(sorted, wide)
  if (changes)
    for (const key of changes.keys()) {
      if (map.has(key)) keys.insert(key)
      else keys.remove(key)
    }
  return keys
}
