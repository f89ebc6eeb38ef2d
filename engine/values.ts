// Values: raw bytes are stored as given and come back as a Buffer; anything else goes
// through msgpack.
import { Packr } from 'msgpackr'
import { EngineError } from './errors.js'
import { FLAG_RAW } from './record.js'

const packr = new Packr({ useRecords: false, mapsAsObjects: true, int64AsType: 'number' })

/** The stored flags and bytes of a value; the bytes are only valid until the next call. */
export function encodeValue(value: unknown): { flags: number; bytes: Uint8Array } {
  if (value instanceof Uint8Array) return { flags: FLAG_RAW, bytes: value }
  const t = typeof value
  if (value === undefined || t === 'function' || t === 'symbol') {
    throw new EngineError('INVALID_ARGUMENT', `a value of type ${t} cannot be stored`)
  }
  try {
    return { flags: 0, bytes: packr.pack(value) }
  } catch (err) {
    throw new EngineError('INVALID_ARGUMENT', `value cannot be encoded: ${(err as Error).message}`)
  }
}

/** The value of the bytes; raw bytes are copied unless `own` (the caller's alone to give). */
export function decodeValue(
  flags: number,
  buf: Buffer,
  start: number,
  end: number,
  own = false,
): unknown {
  if (flags & FLAG_RAW)
    return own ? buf.subarray(start, end) : Buffer.from(buf.subarray(start, end))
  return packr.unpack(buf.subarray(start, end))
}
