// A point in a namespace's history as a query gives it (`at=`): a version (digits), or an
// RFC 3339 time (a `Z` or an offset, seconds optional fractions included).
import type { HistoryPoint } from '../store/types.js'

const VERSION = /^[0-9]{1,16}$/
const RFC3339 =
  /^([0-9]{4})-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])[Tt ]([01][0-9]|2[0-3]):([0-5][0-9]):([0-5][0-9]|60)(\.[0-9]{1,9})?([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$/

/** The point, or undefined when the text is neither a version nor an RFC 3339 time. */
export function parsePoint(text: string): HistoryPoint | undefined {
  if (VERSION.test(text)) {
    const version = Number(text)
    return Number.isSafeInteger(version) ? { version } : undefined
  }
  const m = RFC3339.exec(text)
  if (m === null) return undefined
  // Date.parse takes fractions to the millisecond only; a day past its month's end is refused.
  const [, y, mo, d] = m
  const day = new Date(Date.UTC(Number(y), Number(mo) - 1, Number(d)))
  if (day.getUTCDate() !== Number(d)) return undefined
  const at = Date.parse(text.replace(/(\.[0-9]{3})[0-9]+/, '$1').replace(' ', 'T'))
  return Number.isFinite(at) ? { at } : undefined
}

export const POINT_HELP =
  'A point is a version (digits) or an RFC 3339 time such as 2026-12-01T10:00:00Z.'
