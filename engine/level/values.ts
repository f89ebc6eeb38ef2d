// Values as the engine keeps them: a string as a msgpack string, bytes byte for byte. Either
// comes back in whichever form a read asks for, as the same UTF-8 bytes.
import type { Format } from './keys.js'

export type LevelValue = string | Uint8Array

export function fromEngineValue(v: unknown, format: Format): LevelValue {
  if (format === 'utf8') return typeof v === 'string' ? v : (v as Buffer).toString('utf8')
  const buf = typeof v === 'string' ? Buffer.from(v, 'utf8') : (v as Buffer)
  return format === 'buffer' ? buf : new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength)
}
