import { compareKeys, hasHighUnits } from './utf8.js'

const MAX_CHUNK = 512

/**
 * The keys of one namespace in UTF-8 byte order, held as a list of sorted chunks so an
 * insert or removal moves at most one chunk's worth of references, and a scan walks
 * plain arrays.
 *
 * JavaScript's own `<` compares UTF-16 code units, which is UTF-8 byte order for every key
 * without a surrogate pair or a unit from U+D800 up. Until such a key arrives (`wide`), the
 * binary searches use `<`, several times faster than comparing by hand; once one does,
 * they use compareKeys. The order kept so far is valid either way.
 */
export class SortedKeys {
  chunks: string[][] = [[]]
  size = 0
  wide = false

  static from(sorted: string[], wide: boolean): SortedKeys {
    const s = new SortedKeys()
    s.wide = wide
    if (sorted.length === 0) return s
    s.chunks = []
    for (let i = 0; i < sorted.length; i += MAX_CHUNK / 2)
      s.chunks.push(sorted.slice(i, i + MAX_CHUNK / 2))
    s.size = sorted.length
    return s
  }

  private before(a: string, b: string): boolean {
    return this.wide ? compareKeys(a, b) < 0 : a < b
  }

  /** Index of the first chunk whose last key is >= key (the last chunk if none). */
  private chunkFor(key: string): number {
    const chunks = this.chunks
    let lo = 0
    let hi = chunks.length - 1
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      const c = chunks[mid]!
      if (this.before(c[c.length - 1]!, key)) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  private lowerBound(arr: string[], key: string): number {
    let lo = 0
    let hi = arr.length
    if (this.wide) {
      while (lo < hi) {
        const mid = (lo + hi) >> 1
        if (compareKeys(arr[mid]!, key) < 0) lo = mid + 1
        else hi = mid
      }
    } else {
      while (lo < hi) {
        const mid = (lo + hi) >> 1
        if (arr[mid]! < key) lo = mid + 1
        else hi = mid
      }
    }
    return lo
  }

  insert(key: string): void {
    if (!this.wide && hasHighUnits(key)) this.wide = true
    const ci = this.chunkFor(key)
    const chunk = this.chunks[ci]!
    const i = this.lowerBound(chunk, key)
    if (i < chunk.length && chunk[i] === key) return
    chunk.splice(i, 0, key)
    this.size++
    if (chunk.length > MAX_CHUNK) this.chunks.splice(ci + 1, 0, chunk.splice(MAX_CHUNK / 2))
  }

  remove(key: string): void {
    const ci = this.chunkFor(key)
    const chunk = this.chunks[ci]!
    const i = this.lowerBound(chunk, key)
    if (i >= chunk.length || chunk[i] !== key) return
    chunk.splice(i, 1)
    this.size--
    if (chunk.length === 0 && this.chunks.length > 1) this.chunks.splice(ci, 1)
  }

  /** Position of the first key >= key (strict: > key). */
  seek(key: string, strict: boolean): [number, number] {
    const ci = this.chunkFor(key)
    const chunk = this.chunks[ci]!
    let i = this.lowerBound(chunk, key)
    if (strict && i < chunk.length && chunk[i] === key) i++
    if (i >= chunk.length && ci < this.chunks.length - 1) return [ci + 1, 0]
    return [ci, i]
  }

  /** Up to `max` keys after `after` (from the first, when undefined), in order. */
  following(after: string | undefined, max: number): string[] {
    let [ci, i] = after === undefined ? [0, 0] : this.seek(after, true)
    const out: string[] = []
    for (; ci < this.chunks.length && out.length < max; ci++, i = 0) {
      const chunk = this.chunks[ci]!
      for (; i < chunk.length && out.length < max; i++) out.push(chunk[i]!)
    }
    return out
  }

  /** Position just past the last key that sorts before `prefix` or starts with it. */
  seekPastPrefix(prefix: string): [number, number] {
    const chunks = this.chunks
    const before = (k: string) => k.startsWith(prefix) || compareKeys(k, prefix) < 0
    let lo = 0
    let hi = chunks.length - 1
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      const c = chunks[mid]!
      if (before(c[c.length - 1]!)) lo = mid + 1
      else hi = mid
    }
    const chunk = chunks[lo]!
    let a = 0
    let b = chunk.length
    while (a < b) {
      const m = (a + b) >> 1
      if (before(chunk[m]!)) a = m + 1
      else b = m
    }
    return [lo, a]
  }
}
