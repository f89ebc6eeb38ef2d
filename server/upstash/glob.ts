// Redis's glob patterns (KEYS, SCAN MATCH): `*`, `?`, `[abc]`, `[^a]`, `[a-z]` and `\` to
// take the next character as it is. Matched on code points.

/**
 * Whether `s` matches the pattern. One backtracking point (the last `*` seen) is enough for
 * these patterns, so the time is bounded by pattern length times string length.
 */
export function globMatch(pattern: string, str: string): boolean {
  const p = [...pattern]
  const s = [...str]
  let pi = 0
  let si = 0
  let starP = -1
  let starS = 0
  while (si < s.length) {
    if (pi < p.length && p[pi] === '*') {
      while (p[pi] === '*') pi++
      if (pi === p.length) return true
      starP = pi
      starS = si
      continue
    }
    const step = pi < p.length ? one(p, pi, s[si]!) : -1
    if (step > 0) {
      pi += step
      si++
      continue
    }
    if (starP < 0) return false
    pi = starP
    si = ++starS
  }
  while (p[pi] === '*') pi++
  return pi === p.length
}

/** How many pattern characters at `pi` match the character `c` (0: no match). */
function one(p: string[], pi: number, c: string): number {
  const first = p[pi]!
  if (first === '?') return 1
  if (first === '\\' && pi + 1 < p.length) return p[pi + 1] === c ? 2 : 0
  if (first !== '[') return first === c ? 1 : 0
  let j = pi + 1
  const not = p[j] === '^'
  if (not) j++
  let hit = false
  for (; j < p.length && p[j] !== ']'; j++) {
    if (p[j] === '\\' && j + 1 < p.length) {
      j++
      if (p[j] === c) hit = true
    } else if (p[j + 1] === '-' && j + 2 < p.length && p[j + 2] !== ']') {
      let lo = p[j]!
      let hi = p[j + 2]!
      if (lo > hi) [lo, hi] = [hi, lo]
      if (c >= lo && c <= hi) hit = true
      j += 2
    } else if (p[j] === c) hit = true
  }
  // An unclosed class runs to the end of the pattern, as in Redis.
  return hit !== not ? Math.min(j, p.length - 1) - pi + 1 : 0
}

/** The literal text every match begins with: a listing's prefix. */
export function literalPrefix(pattern: string): string {
  let out = ''
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!
    if (c === '*' || c === '?' || c === '[') return out
    if (c === '\\') {
      if (i + 1 >= pattern.length) return out
      out += pattern[++i]
    } else out += c
  }
  return out
}
