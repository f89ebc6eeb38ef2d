// List cursors: base64url of `<last key listed>\0<prefix>`. The prefix is inside so a
// cursor used with another prefix is refused rather than silently listing the wrong keys;
// keys cannot hold U+0000, so the split is unambiguous.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })
const SHAPE = /^[A-Za-z0-9_-]+$/

export function encodeCursor(lastKey: string, prefix: string): string {
  return Buffer.from(`${lastKey}\0${prefix}`, 'utf8').toString('base64url')
}

/** The key to list after, or undefined when the cursor is not one we made for this prefix. */
export function decodeCursor(cursor: string, prefix: string): string | undefined {
  if (cursor.length > 2800 || cursor.length % 4 === 1 || !SHAPE.test(cursor)) return undefined
  let text: string
  try {
    text = utf8.decode(Buffer.from(cursor, 'base64url'))
  } catch {
    return undefined
  }
  const zero = text.indexOf('\0')
  if (zero <= 0) return undefined
  const key = text.slice(0, zero)
  if (text.slice(zero + 1) !== prefix || !key.startsWith(prefix)) return undefined
  return key
}
