// One line of an import body (contract, "Export and import"): the export's format, checked as
// strictly as a PUT. An entry line is an object with `key` and `value` (and `expiresAt`,
// `metadata`; `version` and anything else are ignored); the export's header (`cairn`) and end
// (`end`) lines are passed over; blank lines are too. The value is kept as its JSON text, as
// sent (minus insignificant whitespace), so it imports byte for byte as it was exported.
import { ApiError } from './errors.js'
import { bodyMembers, metadataText, spanString, spanText } from './json-body.js'
import { validKey } from './keys.js'

const MAX_EXPIRES_AT = 253402300799 // 9999-12-31T23:59:59Z

export interface ImportEntry {
  key: string
  value: Buffer
  /** Milliseconds since the Unix epoch. */
  expiresAt?: number
  metadata?: Buffer
}

/** Why a line is refused: its error code and a sentence. */
export interface LineFault {
  code: 'invalid_import' | 'value_too_large'
  message: string
}

const fault = (message: string): LineFault => ({ code: 'invalid_import', message })

/**
 * The line's entry, 'skip' for a header, end or blank line, or its fault. `line` is the
 * line's bytes without its newline.
 */
export function importLine(
  line: Uint8Array,
  maxValueBytes: number | null,
): ImportEntry | 'skip' | LineFault {
  let blank = true
  for (let i = 0; i < line.length && blank; i++) {
    const c = line[i]!
    if (c !== 0x20 && c !== 0x09 && c !== 0x0d) blank = false
  }
  if (blank) return 'skip'
  let members: ReturnType<typeof bodyMembers>
  try {
    members = bodyMembers(line)
  } catch (err) {
    return fault(err instanceof ApiError ? err.message.replace('request body', 'line') : 'not JSON')
  }
  if (members === undefined) return fault('The line is not a JSON object.')
  const keySpan = members.get('key')
  const valueSpan = members.get('value')
  if (keySpan === undefined && valueSpan === undefined) {
    if (members.has('cairn') || members.has('end')) return 'skip'
  }
  if (keySpan === undefined) return fault('The line has no "key".')
  if (valueSpan === undefined) return fault('The line has no "value".')
  const key = spanString(line, keySpan)
  if (key === undefined || !validKey(key))
    return fault(
      '"key" is a string of 1 to 512 bytes of UTF-8, without control characters or "." and ".." segments.',
    )
  const value = spanText(line, valueSpan)
  if (maxValueBytes !== null && value.length > maxValueBytes)
    return {
      code: 'value_too_large',
      message: `The value is ${value.length} bytes of JSON; the plan allows ${maxValueBytes}.`,
    }
  const out: ImportEntry = { key, value: Buffer.from(value) }
  const md = members.get('metadata')
  if (md !== undefined) {
    try {
      const m = metadataText(line, md)
      if (m !== null) out.metadata = Buffer.from(m)
    } catch (err) {
      return fault((err as Error).message)
    }
  }
  const x = members.get('expiresAt')
  if (x !== undefined) {
    const text = spanText(line, x).toString('latin1')
    if (text !== 'null') {
      const n = /^[1-9][0-9]{0,11}$/.test(text) ? Number(text) : Number.NaN
      if (!(n <= MAX_EXPIRES_AT))
        return fault('"expiresAt" is a whole number of unix seconds, or null.')
      out.expiresAt = n * 1000
    }
  }
  return out
}
