// A request's query string, read strictly. URLSearchParams quietly takes a stray `%` or
// `%zz` literally, turns bytes that are not UTF-8 into U+FFFD and keeps the first of a name
// given twice: a listing or a prefix delete would then act on a prefix the client never
// meant. Here each of those is refused, with the parameter to blame and the reason.

export interface QueryFault {
  /** The parameter's name as sent ('' when the name itself is not readable). */
  name: string
  message: string
}

export function parseQuery(raw: string): URLSearchParams | QueryFault {
  const q = new URLSearchParams()
  if (raw === '') return q
  for (const part of raw.split('&')) {
    if (part === '') continue
    const eq = part.indexOf('=')
    const name = decoded(eq < 0 ? part : part.slice(0, eq))
    if (name === undefined)
      return { name: '', message: 'The query string is not percent-encoded UTF-8.' }
    const value = decoded(eq < 0 ? '' : part.slice(eq + 1))
    if (value === undefined) return { name, message: `${name} is not percent-encoded UTF-8.` }
    if (q.has(name)) return { name, message: `The query names ${name} more than once.` }
    q.append(name, value)
  }
  return q
}

function decoded(s: string): string | undefined {
  try {
    return decodeURIComponent(s.includes('+') ? s.replace(/\+/g, ' ') : s)
  } catch {
    return undefined
  }
}
