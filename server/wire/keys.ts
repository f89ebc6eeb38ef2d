// A key as it arrives in a URL path segment: percent-decoded as UTF-8 and checked against
// the contract's rules. /v1 and the dashboard's data browser both take keys this way.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })
const MAX_KEY_BYTES = 512

function hex(c: number): number {
  if (c >= 48 && c <= 57) return c - 48
  if (c >= 65 && c <= 70) return c - 55
  if (c >= 97 && c <= 102) return c - 87
  return -1
}

/**
 * The key a raw path segment names, or undefined when it is not a valid key: malformed
 * percent-encoding, invalid UTF-8, a control character, a `.` or `..` segment, or not 1 to
 * 512 bytes once decoded.
 */
export function decodeKey(raw: string): string | undefined {
  const n = raw.length
  if (n === 0) return undefined
  let plain = true
  for (let i = 0; i < n; i++) {
    const c = raw.charCodeAt(i)
    if (c === 37 || c < 0x21 || c >= 0x7f) {
      plain = false
      break
    }
  }
  let key: string
  if (plain) {
    if (n > MAX_KEY_BYTES) return undefined
    key = raw
  } else {
    const decoded = percentDecode(raw)
    if (decoded === undefined) return undefined
    key = decoded
    for (let i = 0; i < key.length; i++) {
      const c = key.charCodeAt(i)
      if (c < 0x20 || c === 0x7f) return undefined
    }
  }
  return hasDotSegment(key) ? undefined : key
}

function percentDecode(raw: string): string | undefined {
  const bytes = Buffer.allocUnsafe(raw.length * 3)
  let len = 0
  for (let i = 0; i < raw.length; i++) {
    const c = raw.charCodeAt(i)
    if (c === 37) {
      if (i + 2 >= raw.length) return undefined
      const hi = hex(raw.charCodeAt(i + 1))
      const lo = hex(raw.charCodeAt(i + 2))
      if (hi < 0 || lo < 0) return undefined
      bytes[len++] = hi * 16 + lo
      i += 2
    } else if (c < 0x80) {
      bytes[len++] = c
    } else {
      // A raw non-ASCII character: uWebSockets.js already decoded the bytes as UTF-8, and
      // turned invalid ones into U+FFFD, which we therefore cannot accept as written.
      if (c === 0xfffd) return undefined
      const end = c >= 0xd800 && c < 0xdc00 ? i + 2 : i + 1
      len += bytes.write(raw.slice(i, end), len, 'utf8')
      i = end - 1
    }
    if (len > MAX_KEY_BYTES) return undefined
  }
  try {
    return utf8.decode(bytes.subarray(0, len))
  } catch {
    return undefined
  }
}

function hasDotSegment(key: string): boolean {
  if (key.indexOf('.') < 0) return false
  for (const seg of key.split('/')) if (seg === '.' || seg === '..') return true
  return false
}

/** Whether a key given as a string (a transaction's op) meets the same rules. */
export function validKey(key: string): boolean {
  // A lone surrogate (a JSON escape like \ud800) has no UTF-8 form.
  if (key.length === 0 || /[\ud800-\udfff]/u.test(key) || Buffer.byteLength(key) > MAX_KEY_BYTES)
    return false
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i)
    if (c < 0x20 || c === 0x7f) return false
  }
  return !hasDotSegment(key)
}
