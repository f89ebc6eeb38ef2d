// Walks a key range of the database's namespace in pages of the engine's sorted listing. The
// engine lists past an exclusive `after` with no upper bound, so the range's far end is checked
// here, key by key. Nothing is a snapshot: each page is the index as it is when read.
import type { Db } from '../db.js'
import { justAbove, justBelow, type LevelKey, toEngineKey } from './keys.js'

export interface RangeOptions {
  gt?: unknown
  gte?: unknown
  lt?: unknown
  lte?: unknown
  reverse: boolean
}

/** A page never asks the engine for more keys than this. */
const MAX_PAGE = 1000

const isKey = (k: unknown): k is LevelKey => typeof k === 'string' || k instanceof Uint8Array

export class Cursor {
  private readonly lower: string | undefined
  private readonly lowerOpen: boolean
  private readonly upper: string | undefined
  private readonly upperOpen: boolean
  private readonly reverse: boolean
  /** The engine's exclusive starting point of the next page; undefined: the very start. */
  private after: string | undefined
  private page: string[] = []
  private at = 0
  /** The engine has no keys past the page, or a key fell outside the range. */
  private exhausted = false
  /** Pages start small (an iterator read once) and grow as it keeps reading. */
  private pageSize = 16

  constructor(
    private readonly db: Db,
    private readonly ns: string,
    range: RangeOptions,
  ) {
    // As in abstract-level's own test suite: gte wins over gt, lte over lt.
    const lo = isKey(range.gte) ? range.gte : range.gt
    const hi = isKey(range.lte) ? range.lte : range.lt
    this.lower = isKey(lo) ? toEngineKey(lo) : undefined
    this.lowerOpen = !isKey(range.gte)
    this.upper = isKey(hi) ? toEngineKey(hi) : undefined
    this.upperOpen = !isKey(range.lte)
    this.reverse = range.reverse
    if (this.reverse) {
      if (this.upper !== undefined) this.after = this.upperOpen ? this.upper : justAbove(this.upper)
    } else if (this.lower !== undefined) {
      this.after = this.lowerOpen ? this.lower : justBelow(this.lower)
    }
  }

  /** Moves to `target` (an engine key): the next key is the first at or past it. */
  seek(target: string): void {
    this.after = this.reverse ? justAbove(target) : justBelow(target)
    this.page = []
    this.at = 0
    this.exhausted = false
  }

  /** Up to `want` keys in order from where the cursor is; fewer only at the range's end. */
  async take(want: number): Promise<string[]> {
    const out: string[] = []
    while (!this.takeNow(want, out))
      await this.fetchLater(Math.max(want - out.length, this.pageSize))
    return out
  }

  /**
   * take(), answered synchronously: appends the keys to `out` and says true, or says false
   * when a page must first be waited for (just after open, while the engine still sorts a large
   * namespace's keys); then fetchLater() brings it and takeNow() goes on from there.
   */
  takeNow(want: number, out: string[]): boolean {
    while (out.length < want) {
      if (this.at === this.page.length) {
        if (this.exhausted) return true
        if (!this.fetchNow(Math.max(want - out.length, this.pageSize))) return false
        if (this.page.length === 0) return true
      }
      const k = this.page[this.at++]!
      if (!this.inRange(k)) {
        this.exhausted = true
        this.page = []
        this.at = 0
        return true
      }
      out.push(k)
    }
    return true
  }

  private inRange(k: string): boolean {
    if (this.lower !== undefined && (k < this.lower || (this.lowerOpen && k === this.lower)))
      return false
    if (this.upper !== undefined && (k > this.upper || (this.upperOpen && k === this.upper)))
      return false
    return true
  }

  private fetchNow(size: number): boolean {
    const limit = Math.min(size, MAX_PAGE)
    const res = this.db.listNow(this.ns, { after: this.after, limit, reverse: this.reverse })
    if (res === undefined) return false
    this.took(res.keys, limit)
    return true
  }

  async fetchLater(size: number): Promise<void> {
    const limit = Math.min(size, MAX_PAGE)
    const res = await this.db.list(this.ns, { after: this.after, limit, reverse: this.reverse })
    this.took(res.keys, limit)
  }

  private took(keys: string[], limit: number): void {
    this.pageSize = Math.min(this.pageSize * 2, MAX_PAGE)
    this.page = keys
    this.at = 0
    if (keys.length < limit) this.exhausted = true
    if (keys.length > 0) this.after = keys[keys.length - 1]
  }
}
