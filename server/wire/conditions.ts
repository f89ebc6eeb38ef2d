// If-Match and If-None-Match. Versions are numbers the engine hands out; an ETag is the
// version in quotes. A weak tag (W/"7") names the same version: the value is stored exactly,
// so a weak and a strong match are the same thing here.

/** '*' or the versions listed; undefined when the header is absent. */
export type Tags = '*' | string[]

export function parseTags(header: string): Tags | undefined {
  if (header === '') return undefined
  const h = header.trim()
  if (h === '*') return '*'
  const out: string[] = []
  for (const part of h.split(',')) {
    let t = part.trim()
    if (t.startsWith('W/')) t = t.slice(2)
    if (t.length >= 2 && t.startsWith('"') && t.endsWith('"')) out.push(t.slice(1, -1))
    else out.push(`\u0000${t}`) // unquoted: matches nothing, yet keeps the header meaningful
  }
  return out
}

export function matches(tags: Tags, version: number | undefined): boolean {
  if (version === undefined) return false
  return tags === '*' || tags.includes(String(version))
}

/** A single strong tag that can go straight to the engine as `ifVersion`, or undefined. */
export function singleVersion(tags: Tags): number | undefined {
  if (tags === '*' || tags.length !== 1) return undefined
  const t = tags[0]!
  // A tag that is not one of our versions can match nothing: -1 makes the engine refuse.
  return /^[1-9][0-9]{0,15}$/.test(t) ? Number(t) : -1
}
