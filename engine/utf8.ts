// Keys sort by their UTF-8 bytes, which is code-point order. JavaScript compares UTF-16 code
// units, which agrees except when a surrogate (U+D800..U+DFFF, half of a code point above
// U+FFFF) meets a unit in U+E000..U+FFFF: the surrogate must then sort after.

/** Negative, zero or positive as a sorts before, with or after b in UTF-8 byte order. */
export function compareKeys(a: string, b: string): number {
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i)
    const y = b.charCodeAt(i)
    if (x !== y) {
      if (x >= 0xd800 && y >= 0xd800) return fixup(x) - fixup(y)
      return x - y
    }
  }
  return a.length - b.length
}

const fixup = (u: number) => (u >= 0xe000 ? u - 0x800 : u + 0x2000)

/** Sorts keys in place in UTF-8 byte order (the native sort when it agrees); says which it used. */
export function sortKeys(keys: string[]): { keys: string[]; wide: boolean } {
  let wide = false
  for (let i = 0; i < keys.length && !wide; i++) wide = hasHighUnits(keys[i]!)
  return { keys: wide ? keys.sort(compareKeys) : keys.sort(), wide }
}

/** Whether a key holds a UTF-16 unit from U+D800 up, where `<` and UTF-8 order can differ. */
export function hasHighUnits(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) >= 0xd800) return true
  return false
}

const LONE_SURROGATE = /[\ud800-\udfff]/u

/** Whether a string has a UTF-8 form: no surrogate without its other half. */
export function isWellFormed(s: string): boolean {
  return !LONE_SURROGATE.test(s)
}
