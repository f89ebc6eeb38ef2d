// List cursors: base64url of `<last key listed>\0<prefix>\0<mode>[\0<start>\0<end>]`. A
// cursor carries the listing it continues, so `?cursor=` alone goes on with the same prefix
// and range, and one sent with a different prefix or range is refused rather than silently
// listing the wrong keys. `mode` names the listing's shape (empty: keys, forward) so later
// shapes (entries, reverse) cannot be mixed with it either. Keys cannot hold U+0000, so the
// split is unambiguous. Cursors made before the mode or the range existed still decode (mode
// '', no range).
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })
const SHAPE = /^[A-Za-z0-9_-]+$/

export interface Cursor {
  /** The key to list after. */
  after: string
  prefix: string
  mode: string
  /** The range's bounds ('' for none). */
  start: string
  end: string
}

export function encodeCursor(
  lastKey: string,
  prefix: string,
  mode = '',
  start = '',
  end = '',
): string {
  const range = start === '' && end === '' ? '' : `\0${start}\0${end}`
  return Buffer.from(`${lastKey}\0${prefix}\0${mode}${range}`, 'utf8').toString('base64url')
}

/** The cursor's walk, or undefined when it is not one we made. */
export function decodeCursor(cursor: string): Cursor | undefined {
  if (cursor.length > 5600 || cursor.length % 4 === 1 || !SHAPE.test(cursor)) return undefined
  let text: string
  try {
    text = utf8.decode(Buffer.from(cursor, 'base64url'))
  } catch {
    return undefined
  }
  const parts = text.split('\0')
  if (parts.length < 2 || parts.length > 5 || parts.length === 4) return undefined
  const [after, prefix, mode = '', start = '', end = ''] = parts as [string, string, string?]
  if (after === '' || !after.startsWith(prefix)) return undefined
  return { after, prefix, mode, start, end }
}

export interface Walk {
  prefix: string
  start: string
  end: string
  after?: string
}

/**
 * Where a listing request starts: its prefix, range and the key to list after. A cursor
 * carries its prefix and range, so alone it continues the walk; with the same ones it is
 * fine; with others (an explicit empty one included) or another mode it is refused
 * (undefined).
 */
export function walkOf(
  givenPrefix: string | null,
  cursor: string | null,
  mode = '',
  givenStart: string | null = null,
  givenEnd: string | null = null,
): Walk | undefined {
  if (cursor === null)
    return { prefix: givenPrefix ?? '', start: givenStart ?? '', end: givenEnd ?? '' }
  const c = decodeCursor(cursor)
  if (
    c === undefined ||
    c.mode !== mode ||
    (givenPrefix !== null && givenPrefix !== c.prefix) ||
    (givenStart !== null && givenStart !== c.start) ||
    (givenEnd !== null && givenEnd !== c.end)
  )
    return undefined
  return { prefix: c.prefix, start: c.start, end: c.end, after: c.after }
}
