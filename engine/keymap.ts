// A namespace's key -> slot map: a plain Map for keys written since the open, and, after an
// open from a checkpoint, the checkpoint's keys as they were read (base-keys.ts). A key is in
// one of the two, never both: a key of the base that is written again keeps its slot there,
// and only a key new to the namespace (or removed and written anew) enters the Map.
import { type BaseKeys, GONE } from './base-keys.js'

export class KeyMap {
  private m = new Map<string, number>()
  base: BaseKeys | null = null

  /** Keys in the Map: those written since the base was made. */
  get fresh(): number {
    return this.m.size
  }

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

  /** Points a key at a slot; a key the base holds is written through its own slot instead. */
  set(key: string, slot: number): this {
    this.m.set(key, slot)
    return this
  }

  delete(key: string): boolean {
    if (this.m.delete(key)) return true
    return this.base?.kill(key) === true
  }

  /** Takes a new base and Map in one step (fold.ts). */
  replace(base: BaseKeys, m: Map<string, number>): void {
    this.base = base
    this.m = m
  }

  clear(): void {
    this.m.clear()
    this.base = null
  }

  *keys(): IterableIterator<string> {
    yield* this.m.keys()
    const b = this.base
    if (b === null) return
    for (let i = 0; i < b.count; i++) if (b.slots[i] !== GONE) yield b.keyAt(i)
  }

  *values(): IterableIterator<number> {
    yield* this.m.values()
    const b = this.base
    if (b === null) return
    for (let i = 0; i < b.count; i++) if (b.slots[i] !== GONE) yield b.slots[i]!
  }
}
