// What the backend suites share: the keys and namespaces they use, a seeded random source,
// and UTF-8 byte order (the order every backend lists in).
export const KEYS = [
  'a',
  'a/1',
  'a/2',
  'a/10',
  'ab',
  'b',
  'b/x',
  'é',
  'été',
  '\u{1F600}',
  'z',
  'zz',
  'k.' + 'x'.repeat(300),
]
export const PREFIXES = ['', 'a', 'a/', 'b', 'é', '\u{1F600}', 'zz', 'none']
export const NAMESPACES = ['m/alpha', 'm/beta']
export const OPS = 1200

export interface Cell {
  value: string
  version: number
  /** The expiry lies between these: the put's start and end, plus its TTL. */
  expLo?: number
  expHi?: number
}

export const utf8 = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b))

export function rng(seed: number): () => number {
  let s = seed >>> 0
  return () => {
    s = (s + 0x6d2b79f5) >>> 0
    let x = s
    x = Math.imul(x ^ (x >>> 15), x | 1)
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61)
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296
  }
}
