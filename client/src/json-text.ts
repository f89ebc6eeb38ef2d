// Checks that text is exactly one JSON value (RFC 8259), without parsing it into numbers or
// objects: putRaw splices the text into the request envelope as it is, so text such as
// `"a","ttl":1` would otherwise rewrite the request around it.

const WS = new Set([0x20, 0x09, 0x0a, 0x0d])
const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y
const STRING = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y
const LITERAL = /true|false|null/y

/** Where the first problem is, or -1 when `text` is exactly one JSON value. */
export function jsonTextError(text: string): number {
  let i = 0
  const skip = () => {
    while (i < text.length && WS.has(text.charCodeAt(i))) i++
  }
  const match = (re: RegExp): boolean => {
    re.lastIndex = i
    if (!re.test(text)) return false
    i = re.lastIndex
    return true
  }
  // Containers open so far: '{' or '['; an explicit stack, so deep nesting cannot overflow.
  const open: number[] = []
  skip()
  for (;;) {
    // A value is expected at i.
    const c = text.charCodeAt(i)
    if (c === 0x7b || c === 0x5b) {
      open.push(c)
      i++
      skip()
      const close = c === 0x7b ? 0x7d : 0x5d
      if (text.charCodeAt(i) === close) {
        open.pop()
        i++
      } else if (c === 0x7b) {
        if (!match(STRING)) return i
        skip()
        if (text.charCodeAt(i++) !== 0x3a) return i - 1
        skip()
        continue
      } else continue
    } else if (!(match(STRING) || match(NUMBER) || match(LITERAL))) return i
    // After a value: close containers, or a comma and the next value.
    for (;;) {
      skip()
      if (open.length === 0) return i === text.length ? -1 : i
      const top = open[open.length - 1]!
      const ch = text.charCodeAt(i)
      if (ch === (top === 0x7b ? 0x7d : 0x5d)) {
        open.pop()
        i++
        continue
      }
      if (ch !== 0x2c) return i
      i++
      skip()
      if (top === 0x7b) {
        if (!match(STRING)) return i
        skip()
        if (text.charCodeAt(i++) !== 0x3a) return i - 1
        skip()
      }
      break
    }
  }
}
