// One key's kept versions in a history window, oldest first. Versions leave from the front
// as the window moves on, one commit's at a time; a hot key can hold a million of them, and
// an array's shift() copies every one that is left (milliseconds each at that size, paid by
// every write that moves the window). The front is an offset instead, and the array is cut
// down once more than half of it has left, so each leaving costs a constant on average.

/** What a chain holds: anything with a version (window.ts's Kept). */
interface Versioned {
  version: number
}

/** Dropped versions held in front of the live ones before the array is cut down. */
const SLACK = 64

export class KeptChain<T extends Versioned> {
  private items: T[] = []
  private head = 0

  get length(): number {
    return this.items.length - this.head
  }

  /**
   * Adds a version in version order. Records come in commit order, but what recovery finds
   * superseded comes after them (FORMAT.md), and may be older than what is kept; such a
   * version already kept is not kept twice.
   */
  add(it: T): void {
    const items = this.items
    let at = items.length
    while (at > this.head && items[at - 1]!.version > it.version) at--
    if (at === items.length) items.push(it)
    else if (at === this.head || items[at - 1]!.version !== it.version) items.splice(at, 0, it)
  }

  /** The i-th oldest version kept (0 <= i < length). */
  at(i: number): T {
    return this.items[this.head + i]!
  }

  /** Removes `it`: at once when it is the oldest, as the window drops them. */
  remove(it: T): void {
    const items = this.items
    if (items[this.head] === it) {
      items[this.head++] = undefined as unknown as T
      if (this.head > SLACK && this.head * 2 > items.length) {
        this.items = items.slice(this.head)
        this.head = 0
      }
      return
    }
    // Not there when a version was kept twice (its second copy is not indexed).
    const i = items.indexOf(it, this.head)
    if (i >= 0) items.splice(i, 1)
  }

  /** The newest version at or below `v`. */
  latest(v: number): T | undefined {
    const n = this.countAtOrBelow(v)
    return n > 0 ? this.items[this.head + n - 1] : undefined
  }

  /** How many versions kept are at or below `v`. */
  countAtOrBelow(v: number): number {
    const items = this.items
    let lo = this.head
    let hi = items.length
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (items[mid]!.version <= v) lo = mid + 1
      else hi = mid
    }
    return lo - this.head
  }
}
