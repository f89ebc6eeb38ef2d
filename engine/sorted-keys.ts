import { compareKeys, hasHighUnits } from './utf8.js'

const MAX_CHUNK = 512

/**
 * Listings a chunk serves unchanged before its JSON text is made: making it costs about what
 * sixteen listings of a hundred of its keys spend in JSON.stringify, so a chunk that changes
 * between listings (a namespace taking new keys) never costs more than twice that.
 */
const TEXT_AFTER = 16

/** A chunk's keys as JSON strings, each with a comma after it, and where each one ends. */
interface ChunkText {
  bytes: Buffer
  ends: Uint32Array
}

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
  /** Per chunk: its text, or how many listings it served since it last changed. */
  private texts: (ChunkText | number)[] = [0]
  size = 0
  wide = false

  static from(sorted: string[], wide: boolean): SortedKeys {
    const s = new SortedKeys()
    s.wide = wide
    if (sorted.length === 0) return s
    s.chunks = []
    for (let i = 0; i < sorted.length; i += MAX_CHUNK / 2)
      s.chunks.push(sorted.slice(i, i + MAX_CHUNK / 2))
    s.texts = s.chunks.map(() => 0)
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
    this.texts[ci] = 0
    if (chunk.length > MAX_CHUNK) {
      this.chunks.splice(ci + 1, 0, chunk.splice(MAX_CHUNK / 2))
      this.texts.splice(ci + 1, 0, 0)
    }
  }

  remove(key: string): void {
    const ci = this.chunkFor(key)
    const chunk = this.chunks[ci]!
    const i = this.lowerBound(chunk, key)
    if (i >= chunk.length || chunk[i] !== key) return
    chunk.splice(i, 1)
    this.size--
    this.texts[ci] = 0
    if (chunk.length === 0 && this.chunks.length > 1) {
      this.chunks.splice(ci, 1)
      this.texts.splice(ci, 1)
    }
  }

  /**
   * The first `count` keys of `spans` (triples: chunk, first position, end position, in
   * ascending order) as the UTF-8 text of a JSON array, copied from the chunks' texts.
   * Undefined while a chunk has no text yet (TEXT_AFTER): the caller writes the keys itself.
   */
  json(spans: number[], count: number): Buffer | undefined {
    if (count === 0) return Buffer.from('[]')
    const texts: ChunkText[] = []
    let size = 1
    let left = count
    for (let s = 0; s < spans.length && left > 0; s += 3) {
      const t = this.text(spans[s]!)
      if (t === undefined) return undefined
      texts.push(t)
      const a = spans[s + 1]!
      const b = Math.min(spans[s + 2]!, a + left)
      size += t.ends[b - 1]! - (a === 0 ? 0 : t.ends[a - 1]!)
      left -= b - a
    }
    const out = Buffer.allocUnsafe(size)
    out[0] = 0x5b
    let o = 1
    left = count
    for (let s = 0, k = 0; k < texts.length; s += 3, k++) {
      const t = texts[k]!
      const a = spans[s + 1]!
      const b = Math.min(spans[s + 2]!, a + left)
      o += t.bytes.copy(out, o, a === 0 ? 0 : t.ends[a - 1]!, t.ends[b - 1]!)
      left -= b - a
    }
    // The last key's comma closes the array instead.
    out[size - 1] = 0x5d
    return out
  }

  /** Chunk ci's text, made once it has served TEXT_AFTER listings unchanged. */
  private text(ci: number): ChunkText | undefined {
    const t = this.texts[ci]!
    if (typeof t !== 'number') return t
    if (t + 1 < TEXT_AFTER) {
      this.texts[ci] = t + 1
      return undefined
    }
    const parts = this.chunks[ci]!.map((k) => `${JSON.stringify(k)},`)
    const joined = parts.join('')
    const bytes = Buffer.from(joined)
    const ascii = bytes.length === joined.length
    const ends = new Uint32Array(parts.length)
    let e = 0
    for (let j = 0; j < parts.length; j++) {
      e += ascii ? parts[j]!.length : Buffer.byteLength(parts[j]!)
      ends[j] = e
    }
    const made = { bytes, ends }
    this.texts[ci] = made
    return made
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
