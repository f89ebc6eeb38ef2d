// A listing's, count's or export's key range: `start` (inclusive) and `end` (exclusive), in
// UTF-8 byte order, within the prefix when one is given. '' means no bound.
import { compareKeys } from '../../engine/utf8.js'

/** A bound is at most a key's length. */
const MAX_BOUND_BYTES = 512

export interface KeyRange {
  prefix: string
  start: string
  end: string
}

/** Why the range is refused (400 invalid_range), or undefined when it is a range. */
export function rangeFault(r: KeyRange): string | undefined {
  for (const [name, b] of [
    ['start', r.start],
    ['end', r.end],
  ] as const) {
    if (Buffer.byteLength(b) > MAX_BOUND_BYTES) return `${name} is at most 512 bytes.`
    if (b !== '' && !b.startsWith(r.prefix))
      return `${name} must lie within the prefix ${JSON.stringify(r.prefix)}.`
  }
  if (r.start !== '' && r.end !== '' && compareKeys(r.start, r.end) > 0)
    return 'start comes after end.'
  return undefined
}

/** Whether a key lies in the range. */
export function inRange(key: string, r: KeyRange): boolean {
  return (
    key.startsWith(r.prefix) &&
    (r.start === '' || compareKeys(key, r.start) >= 0) &&
    (r.end === '' || compareKeys(key, r.end) < 0)
  )
}
