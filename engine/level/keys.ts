// Level keys are bytes (any length, the empty key too); the engine keeps keys of 1 to 512
// UTF-8 bytes. A key's bytes become an engine key by reading them as Latin-1: byte b is code
// point U+00b, one UTF-8 byte below 0x80 and two from 0x80, so an ASCII key is its own engine
// key and UTF-8 order of the result is byte order of the key. The empty key is "\0", which no
// other key becomes: a key whose first byte is 0 gets one more "\0" in front. engine/FORMAT.md
// ("Level keys") argues the choice.

/** The private API's three forms of a key: the database declares all three natively. */
export type Format = 'utf8' | 'buffer' | 'view'

export type LevelKey = string | Uint8Array

/** Engine keys are at most this many UTF-8 bytes (engine/db.ts). */
export const MAX_ENGINE_KEY_BYTES = 512

const EMPTY = '\u0000'

function isAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) >= 0x80) return false
  return true
}

/** The engine key for a key in any of the three forms. */
export function toEngineKey(key: LevelKey): string {
  let s: string
  if (typeof key === 'string') {
    if (key.length === 0) return EMPTY
    s = isAscii(key) ? key : Buffer.from(key, 'utf8').toString('latin1')
  } else {
    if (key.length === 0) return EMPTY
    s = Buffer.from(key.buffer, key.byteOffset, key.byteLength).toString('latin1')
  }
  return s.charCodeAt(0) === 0 ? EMPTY + s : s
}

/** The key an engine key stands for, in the form asked for. */
export function fromEngineKey(s: string, format: Format): LevelKey {
  const bytes = s.charCodeAt(0) === 0 ? s.slice(1) : s
  if (format === 'utf8') {
    return isAscii(bytes) ? bytes : Buffer.from(bytes, 'latin1').toString('utf8')
  }
  const buf = Buffer.from(bytes, 'latin1')
  return format === 'buffer' ? buf : new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength)
}

/**
 * The engine's `after` that starts a forward listing at `k` itself: the greatest string below
 * `k` that no engine key lies between. Every engine key is made of U+0000..U+00FF, so a
 * U+0100 closes off all that begin like `k` with its last code point lowered by one.
 */
export function justBelow(k: string): string | undefined {
  const last = k.charCodeAt(k.length - 1)
  const head = k.slice(0, -1)
  if (last === 0) return head.length === 0 ? undefined : head
  return `${head}${String.fromCharCode(last - 1)}\u0100`
}

/** The engine's `after` that starts a reverse listing at `k` itself: its next string. */
export function justAbove(k: string): string {
  return `${k}\u0000`
}
