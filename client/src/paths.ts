// Builds request paths. Keys and namespace names are checked here for the few cases the
// URL itself would corrupt, so such a call fails with the server's own error code instead
// of silently reaching a different resource.
import { BadRequestError } from './errors.js'

const NAMESPACE = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/
// Path names that are routes of their own, not namespaces.
const RESERVED = new Set(['namespaces', 'usage'])

/** The path segment for a namespace name; throws BadRequestError(`invalid_namespace`) for a name the server would refuse. */
export function namespacePath(name: string): string {
  if (typeof name !== 'string' || !NAMESPACE.test(name) || RESERVED.has(name)) {
    throw new BadRequestError({
      status: 400,
      code: 'invalid_namespace',
      message: `Namespace name ${JSON.stringify(name)} is invalid: use 1 to 64 letters, digits, '_' or '-', starting with a letter or digit; 'namespaces' and 'usage' are reserved.`,
    })
  }
  return name
}

/**
 * The path for a key. Every character is percent-encoded (encodeURIComponent, so `/`
 * becomes %2F, which the server reads as `/`), so `?`, `#`, `%`, spaces and emoji reach
 * the server unchanged. A `.` or `..` segment would be rewritten by URL parsing, and the
 * server refuses them anyway, so they are refused here.
 */
export function keyPath(key: string): string {
  const bad = (why: string): never => {
    throw new BadRequestError({
      status: 400,
      code: 'invalid_key',
      message: `Key ${JSON.stringify(key)} is invalid: ${why}.`,
    })
  }
  if (typeof key !== 'string' || key === '') return bad('a key is 1 to 512 bytes of text')
  if (key.split('/').some((seg) => seg === '.' || seg === '..')) {
    return bad("'.' and '..' path segments are not allowed")
  }
  try {
    return encodeURIComponent(key)
  } catch {
    return bad('it is not valid Unicode (unpaired surrogate)')
  }
}

/**
 * A query string from defined parameters, `%20` for spaces (never `+`). Text that is not
 * valid Unicode (an unpaired surrogate, in a prefix say) throws BadRequestError, as the
 * server would answer.
 */
export function query(params: Record<string, string | number | undefined>): string {
  const parts: string[] = []
  for (const [name, v] of Object.entries(params)) {
    if (v === undefined) continue
    try {
      parts.push(`${name}=${encodeURIComponent(String(v))}`)
    } catch {
      throw new BadRequestError({
        status: 400,
        code: 'invalid_request',
        message: `${name} ${JSON.stringify(v)} is not valid Unicode (unpaired surrogate).`,
      })
    }
  }
  return parts.length ? `?${parts.join('&')}` : ''
}
