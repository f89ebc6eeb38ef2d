// Pieces of request and response bodies shared by the client's methods and its transaction
// builder: ETags, expiry times, metadata, exact parsing.
import { BadRequestError, InvalidMetadataError, InvalidResponseError } from './errors.js'
import { parseJson, stringifyJson } from './json.js'
import { jsonTextError } from './json-text.js'
import { type Reply, replyJson } from './transport.js'
import type { Metadata } from './types.js'

/** Quotes a version for If-Match, leaving an already quoted ETag alone. */
export function etag(version: string): string {
  // `*` is HTTP's "any version": If-Match: * holds while the entry exists.
  if (version === '*') return version
  return /^(W\/)?".*"$/.test(version) ? version : `"${version}"`
}

/** A version as the bare digits a JSON body takes, from a bare or quoted (ETag) one. */
export function bare(version: string): string {
  const m = /^(?:W\/)?"(.*)"$/.exec(version)
  return m ? m[1]! : version
}

export function versionOf(reply: Reply): string | undefined {
  const tag = reply.headers.get('etag')
  if (tag === null) return undefined
  return tag.replace(/^W\//, '').replace(/^"(.*)"$/, '$1')
}

export function invalid(reply: Reply, what: string): InvalidResponseError {
  return new InvalidResponseError({
    status: reply.status,
    code: 'invalid_response',
    message: `The server sent ${what}.`,
    requestId: reply.requestId,
  })
}

export function expiresAtOf(reply: Reply): number | undefined {
  const expires = reply.headers.get('x-expires-at')
  if (expires !== null && expires.trim() !== '' && Number.isFinite(Number(expires))) {
    return Number(expires)
  }
  return undefined
}

/** Unix seconds from seconds or a Date (rounded up to the next second). */
export function unixSeconds(at: number | Date): number {
  return at instanceof Date ? Math.ceil(at.getTime() / 1000) : at
}

/**
 * A value's JSON text for a put (bigints as exact integers). `index` names a transaction's op.
 * @throws BadRequestError, before anything is sent, for a value JSON cannot hold or would
 *   change (`invalid_json`) or cannot write at all (`missing_value`).
 */
export function valueText(key: string, value: unknown, index?: number): string {
  let json: string | undefined
  try {
    json = stringifyJson(value)
  } catch (err) {
    throw new BadRequestError({
      status: 400,
      code: 'invalid_json',
      message: `The value for key ${JSON.stringify(key)} cannot be stored as JSON: ${(err as Error).message}.`,
      cause: err,
      index,
    })
  }
  if (json === undefined) {
    throw new BadRequestError({
      status: 400,
      code: 'missing_value',
      message: `The value for key ${JSON.stringify(key)} cannot be written as JSON (it is ${typeof value}).`,
      index,
    })
  }
  return json
}

/**
 * Checks text given for putRaw: exactly one JSON value, or it would rewrite the request
 * around it. `index` names a transaction's op.
 * @throws BadRequestError (`invalid_json`) before anything is sent.
 */
export function rawText(key: string, json: string, index?: number): string {
  let at = typeof json === 'string' ? jsonTextError(json) : 0
  // Half a surrogate pair has no UTF-8 form: sent, it would be stored as U+FFFD.
  if (at < 0) at = json.search(LONE_SURROGATE)
  if (at >= 0) {
    throw new BadRequestError({
      status: 400,
      code: 'invalid_json',
      message: `putRaw takes exactly one JSON value as text; the text for key ${JSON.stringify(key)} is not one (at position ${at}).`,
      index,
    })
  }
  return json
}

const encoder = new TextEncoder()
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/**
 * The JSON text of metadata: `null`, or an object of at most 1 KiB of JSON text. `index`
 * names a transaction's op.
 * @throws InvalidMetadataError for anything else, before it is sent.
 */
export function metadataText(metadata: Metadata | null, index?: number): string {
  const refuse = (why: string): never => {
    throw new InvalidMetadataError({
      status: 400,
      code: 'invalid_metadata',
      message: `Metadata must be a JSON object of at most 1 KiB of JSON text (or null); ${why}.`,
      index,
    })
  }
  if (metadata === null) return 'null'
  if (typeof metadata !== 'object' || Array.isArray(metadata)) {
    return refuse(`got ${Array.isArray(metadata) ? 'an array' : typeof metadata}`)
  }
  let text: string | undefined
  try {
    text = stringifyJson(metadata)
  } catch (err) {
    return refuse((err as Error).message)
  }
  if (text === undefined) return refuse('it cannot be written as JSON')
  const bytes = encoder.encode(text).length
  if (bytes > 1024) return refuse(`this one is ${bytes} bytes`)
  return text
}

/** A response body parsed with every integer exact (bigint beyond 2^53). */
export function parseExact(reply: Reply): any {
  try {
    return parseJson(reply.text, 'bigint')
  } catch {
    return replyJson(reply)
  }
}

export function describeValue(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v)
  if (typeof v === 'bigint') return `${v}n`
  return String(v)
}
