// How the embedded store keeps an entry's metadata: inside the engine's value bytes, ahead of
// the value's JSON text, so the engine's record layout (FORMAT.md) stays as it is and a value
// and its metadata are written, replaced and compacted as one.
//
//   no metadata:  the value's JSON text, as sent
//   metadata:     0x00, metaLen (u32 LE), the metadata's JSON text, the value's JSON text
//
// JSON text never begins with byte 0x00 (RFC 8259 allows only whitespace and a value's first
// character there), so the first byte tells the two apart, and every value written before
// metadata existed reads back unchanged.

const MARK = 0x00
/** The bytes ahead of the metadata: a mark and its length. */
export const METADATA_HEAD = 5
const HEAD = METADATA_HEAD

/** The bytes the engine stores for a value and its (optional) metadata. */
export function wrap(value: Buffer, metadata: Buffer | undefined): Buffer {
  if (metadata === undefined) return value
  const out = Buffer.allocUnsafe(HEAD + metadata.length + value.length)
  out[0] = MARK
  out.writeUInt32LE(metadata.length, 1)
  metadata.copy(out, HEAD)
  value.copy(out, HEAD + metadata.length)
  return out
}

/** Whether stored bytes carry metadata. */
export const hasMetadata = (stored: Buffer): boolean => stored.length > 0 && stored[0] === MARK

/** The value's JSON text within stored bytes (a view, not a copy). */
export function valueText(stored: Buffer): Buffer {
  if (!hasMetadata(stored)) return stored
  return stored.subarray(HEAD + stored.readUInt32LE(1))
}

/** The metadata's JSON text within stored bytes, or undefined when there is none. */
export function metadataText(stored: Buffer): Buffer | undefined {
  if (!hasMetadata(stored)) return undefined
  return stored.subarray(HEAD, HEAD + stored.readUInt32LE(1))
}
