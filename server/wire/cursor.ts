// List cursors: base64url of `<last key listed>\0<prefix>\0<mode>`. A cursor carries the
// listing it continues, so `?cursor=` alone goes on with the same prefix, and one sent with a
// different prefix is refused rather than silently listing the wrong keys. `mode` names the
// listing's shape (empty: keys, forward) so later shapes (entries, reverse) cannot be mixed
// with it either. Keys cannot hold U+0000, so the split is unambiguous. Cursors made before
// the mode existed (`<key>\0<prefix>`) still decode, as mode ''.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })
const SHAPE = /^[A-Za-z0-9_-]+$/

export interface Cursor {
  /** The key to list after. */
  after: string
  prefix: string
  mode: string
}

export function encodeCursor(lastKey: string, prefix: string, mode = ''): string {
  return Buffer.from(`${lastKey}\0${prefix}\0${mode}`, 'utf8').toString('base64url')
}

/** The cursor's walk, or undefined when it is not one we made. */
export function decodeCursor(cursor: string): Cursor | undefined {
  if (cursor.length > 2800 || cursor.length % 4 === 1 || !SHAPE.test(cursor)) return undefined
  let text: string
  try {
    text = utf8.decode(Buffer.from(cursor, 'base64url'))
  } catch {
    return undefined
  }
  const parts = text.split('\0')
  if (parts.length < 2 || parts.length > 3) return undefined
  const [after, prefix, mode = ''] = parts as [string, string, string?]
  if (after === '' || !after.startsWith(prefix)) return undefined
  return { after, prefix, mode }
}

/**
 * Where a listing request starts: its prefix and the key to list after. A cursor carries its
 * prefix, so alone it continues the walk; with the same prefix it is fine; with another (an
 * explicit empty one included) or another mode it is refused (undefined).
 */
export function walkOf(
  givenPrefix: string | null,
  cursor: string | null,
  mode = '',
): { prefix: string; after?: string } | undefined {
  if (cursor === null) return { prefix: givenPrefix ?? '' }
  const c = decodeCursor(cursor)
  if (c === undefined || c.mode !== mode || (givenPrefix !== null && givenPrefix !== c.prefix))
    return undefined
  return { prefix: c.prefix, after: c.after }
}
