// Request bodies, read as bytes. A PUT body is scanned once: checked to be strict JSON
// (RFC 8259, UTF-8), and the `value` member's text is kept exactly as sent minus
// insignificant whitespace, so big integers, `-0`, member order and escapes come back as they
// went in. Nothing is parsed into JavaScript values except `ttl` and `expiresAt`.
import { ApiError } from './errors.js'

/** Deeper nesting is refused: deep enough for real data, shallow enough for every parser. */
export const MAX_DEPTH = 512

class Invalid extends Error {}
const invalid = (why: string): never => {
  throw new Invalid(why)
}

const WS = new Uint8Array(256)
WS[0x20] = WS[0x09] = WS[0x0a] = WS[0x0d] = 1

/** A strict JSON scanner over bytes; counts whitespace so a clean value can be sliced as is. */
class Scanner {
  i = 0
  spaces = 0

  constructor(readonly b: Uint8Array) {}

  ws(): void {
    const b = this.b
    while (this.i < b.length && WS[b[this.i]!]) {
      this.i++
      this.spaces++
    }
  }

  value(depth: number): void {
    const b = this.b
    if (this.i >= b.length) invalid('the body ends where a value should be')
    const c = b[this.i]!
    if (c === 0x22) this.string()
    else if (c === 0x7b) this.object(depth + 1)
    else if (c === 0x5b) this.array(depth + 1)
    else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) this.number()
    else if (c === 0x74) this.literal('true')
    else if (c === 0x66) this.literal('false')
    else if (c === 0x6e) this.literal('null')
    else invalid(`unexpected byte at offset ${this.i}`)
  }

  literal(word: string): void {
    for (let k = 0; k < word.length; k++) {
      if (this.b[this.i + k] !== word.charCodeAt(k)) invalid(`unexpected byte at offset ${this.i}`)
    }
    this.i += word.length
  }

  number(): void {
    const b = this.b
    const start = this.i
    if (b[this.i] === 0x2d) this.i++
    if (b[this.i] === 0x30) this.i++
    else if (this.digits() === 0) invalid(`bad number at offset ${start}`)
    if (b[this.i] === 0x2e) {
      this.i++
      if (this.digits() === 0) invalid(`bad number at offset ${start}`)
    }
    if (b[this.i] === 0x65 || b[this.i] === 0x45) {
      this.i++
      if (b[this.i] === 0x2b || b[this.i] === 0x2d) this.i++
      if (this.digits() === 0) invalid(`bad number at offset ${start}`)
    }
  }

  digits(): number {
    const b = this.b
    const start = this.i
    while (this.i < b.length && b[this.i]! >= 0x30 && b[this.i]! <= 0x39) this.i++
    return this.i - start
  }

  /** Checks a string, escapes and UTF-8 included; returns true when it holds a backslash. */
  string(): boolean {
    const b = this.b
    let escaped = false
    this.i++
    for (;;) {
      if (this.i >= b.length) invalid('unterminated string')
      const c = b[this.i]!
      if (c === 0x22) {
        this.i++
        return escaped
      }
      if (c < 0x20) invalid(`control character in a string at offset ${this.i}`)
      if (c === 0x5c) {
        escaped = true
        const e = b[this.i + 1]
        if (e === 0x75) {
          for (let k = 2; k < 6; k++) {
            const h = b[this.i + k]
            if (
              h === undefined ||
              !((h >= 0x30 && h <= 0x39) || (h >= 0x41 && h <= 0x46) || (h >= 0x61 && h <= 0x66))
            ) {
              invalid(`bad \\u escape at offset ${this.i}`)
            }
          }
          this.i += 6
        } else if (
          e === 0x22 ||
          e === 0x5c ||
          e === 0x2f ||
          e === 0x62 ||
          e === 0x66 ||
          e === 0x6e ||
          e === 0x72 ||
          e === 0x74
        ) {
          this.i += 2
        } else invalid(`bad escape at offset ${this.i}`)
        continue
      }
      if (c < 0x80) {
        this.i++
        continue
      }
      this.utf8(c)
    }
  }

  /** One multi-byte UTF-8 sequence, rejecting overlong forms, surrogates and > U+10FFFF. */
  utf8(c: number): void {
    const b = this.b
    const i = this.i
    const cont = (k: number, lo = 0x80, hi = 0xbf) => {
      const x = b[i + k]
      if (x === undefined || x < lo || x > hi) invalid(`invalid UTF-8 at offset ${i}`)
    }
    if (c >= 0xc2 && c <= 0xdf) {
      cont(1)
      this.i += 2
    } else if (c >= 0xe0 && c <= 0xef) {
      cont(1, c === 0xe0 ? 0xa0 : 0x80, c === 0xed ? 0x9f : 0xbf)
      cont(2)
      this.i += 3
    } else if (c >= 0xf0 && c <= 0xf4) {
      cont(1, c === 0xf0 ? 0x90 : 0x80, c === 0xf4 ? 0x8f : 0xbf)
      cont(2)
      cont(3)
      this.i += 4
    } else invalid(`invalid UTF-8 at offset ${i}`)
  }

  array(depth: number): void {
    if (depth > MAX_DEPTH) invalid(`nested deeper than ${MAX_DEPTH} levels`)
    const b = this.b
    this.i++
    this.ws()
    if (b[this.i] === 0x5d) {
      this.i++
      return
    }
    for (;;) {
      this.value(depth)
      this.ws()
      const c = b[this.i]
      this.i++
      if (c === 0x5d) return
      if (c !== 0x2c) invalid(`expected , or ] at offset ${this.i - 1}`)
      this.ws()
    }
  }

  object(
    depth: number,
    member?: (
      nameStart: number,
      nameEnd: number,
      escaped: boolean,
      vStart: number,
      vEnd: number,
      spaces: number,
    ) => void,
  ): void {
    if (depth > MAX_DEPTH) invalid(`nested deeper than ${MAX_DEPTH} levels`)
    const b = this.b
    this.i++
    this.ws()
    if (b[this.i] === 0x7d) {
      this.i++
      return
    }
    for (;;) {
      if (b[this.i] !== 0x22) invalid(`expected a member name at offset ${this.i}`)
      const nameStart = this.i + 1
      const escaped = this.string()
      const nameEnd = this.i - 1
      this.ws()
      if (b[this.i] !== 0x3a) invalid(`expected : at offset ${this.i}`)
      this.i++
      this.ws()
      const vStart = this.i
      const before = this.spaces
      this.value(depth)
      member?.(nameStart, nameEnd, escaped, vStart, this.i, this.spaces - before)
      this.ws()
      const c = b[this.i]
      this.i++
      if (c === 0x7d) return
      if (c !== 0x2c) invalid(`expected , or } at offset ${this.i - 1}`)
      this.ws()
    }
  }
}

function memberName(b: Uint8Array, start: number, end: number, escaped: boolean): string {
  const raw = Buffer.from(b.buffer, b.byteOffset + start, end - start).toString('utf8')
  return escaped ? (JSON.parse(`"${raw}"`) as string) : raw
}

/**
 * Walks a request envelope's top-level members (names decoded, escapes included). A member
 * given twice is refused: parsers disagree on which copy wins (first, last, or an error), so
 * a proxy or client library could read a different request from the same bytes.
 */
function envelope(
  s: Scanner,
  member: (name: string, start: number, end: number, spaces: number) => void,
): void {
  const b = s.b
  const seen: string[] = []
  s.object(0, (ns, ne, escaped, start, end, spaces) => {
    const name = memberName(b, ns, ne, escaped)
    if (seen.includes(name)) invalid(`the member ${JSON.stringify(name)} appears twice`)
    seen.push(name)
    member(name, start, end, spaces)
  })
}

/** Copies a value's text without whitespace outside strings. */
function minify(b: Uint8Array, start: number, end: number, spaces: number): Buffer {
  const out = Buffer.allocUnsafe(end - start - spaces)
  let o = 0
  let inString = false
  for (let i = start; i < end; i++) {
    const c = b[i]!
    if (inString) {
      if (c === 0x5c) {
        out[o++] = c
        out[o++] = b[++i]!
        continue
      }
      if (c === 0x22) inString = false
    } else if (WS[c]) continue
    else if (c === 0x22) inString = true
    out[o++] = c
  }
  return out
}

export interface PutBody {
  /** The value's JSON text. */
  value: Buffer
  /** Seconds. */
  ttl?: number
  /** Unix seconds. */
  expiresAt?: number
  /** The metadata's JSON text (an object), when given and not null. */
  metadata?: Buffer
}

/** The most metadata's JSON text may be, as sent. */
export const MAX_METADATA_BYTES = 1024

const MAX_TTL_SECONDS = 100 * 365 * 86400
const MAX_EXPIRES_AT = 253402300799 // 9999-12-31T23:59:59Z

function whole(b: Uint8Array, start: number, end: number): number | undefined {
  const c = b[start]!
  if (c !== 0x2d && !(c >= 0x30 && c <= 0x39)) return undefined
  const n = Number(Buffer.from(b.buffer, b.byteOffset + start, end - start).toString('latin1'))
  return Number.isSafeInteger(n) ? n : undefined
}

/** Parses `{"value": any, "ttl"?: seconds, "expiresAt"?: unix seconds}`; throws ApiError. */
export function parsePutBody(
  body: Uint8Array,
  maxValueBytes: number | null,
  nowMs: number,
): PutBody {
  const s = new Scanner(body)
  let vStart = -1
  let vEnd = -1
  let vSpaces = 0
  let ttl: [number, number] | undefined
  let exp: [number, number] | undefined
  let meta: Span | undefined
  try {
    s.ws()
    if (body[s.i] !== 0x7b) {
      s.value(0)
      s.ws()
      if (s.i !== body.length) invalid(`unexpected byte at offset ${s.i}`)
      throw new ApiError('missing_value', 'The body must be a JSON object with a "value" member.')
    }
    envelope(s, (name, start, end, spaces) => {
      if (name === 'value') {
        vStart = start
        vEnd = end
        vSpaces = spaces
      } else if (name === 'ttl') ttl = [start, end]
      else if (name === 'expiresAt') exp = [start, end]
      else if (name === 'metadata') meta = { start, end, spaces }
    })
    s.ws()
    if (s.i !== body.length) invalid(`unexpected byte after the body at offset ${s.i}`)
  } catch (err) {
    if (err instanceof Invalid) {
      throw new ApiError(
        'invalid_json',
        body.length === 0
          ? 'The request body is empty; send {"value": ...}.'
          : `The request body is not valid JSON: ${err.message}.`,
      )
    }
    throw err
  }
  if (vStart < 0) throw new ApiError('missing_value')
  const out: PutBody = {
    value:
      vSpaces === 0
        ? Buffer.from(body.buffer, body.byteOffset + vStart, vEnd - vStart)
        : minify(body, vStart, vEnd, vSpaces),
  }
  if (maxValueBytes !== null && out.value.length > maxValueBytes) {
    throw new ApiError(
      'value_too_large',
      `The value is ${out.value.length} bytes of JSON; the plan allows ${maxValueBytes}.`,
    )
  }
  if (meta) {
    const m = metadataText(body, meta)
    if (m !== null) out.metadata = m
  }
  Object.assign(out, expiryOf(body, ttl, exp, nowMs))
  return out
}

/** `ttl` and `expiresAt` as PUT takes them (spans of their text); throws invalid_ttl. */
export function expiryOf(
  body: Uint8Array,
  ttl: [number, number] | undefined,
  exp: [number, number] | undefined,
  nowMs: number,
): { ttl?: number; expiresAt?: number } {
  const out: { ttl?: number; expiresAt?: number } = {}
  if (ttl && exp) throw new ApiError('invalid_ttl', 'Give "ttl" or "expiresAt", not both.')
  if (ttl) {
    const n = whole(body, ttl[0], ttl[1])
    if (n === undefined || n < 1 || n > MAX_TTL_SECONDS) {
      throw new ApiError(
        'invalid_ttl',
        `"ttl" is a whole number of seconds from 1 to ${MAX_TTL_SECONDS}.`,
      )
    }
    out.ttl = n
  }
  if (exp) {
    const n = whole(body, exp[0], exp[1])
    if (n === undefined || n * 1000 <= nowMs || n > MAX_EXPIRES_AT) {
      throw new ApiError(
        'invalid_ttl',
        '"expiresAt" is a whole number of unix seconds in the future.',
      )
    }
    out.expiresAt = n
  }
  return out
}

/** Parses a small JSON object body (namespace creation, the operator endpoint); throws ApiError. */
export function parseJsonObject(body: Uint8Array): Record<string, unknown> {
  const s = new Scanner(body)
  try {
    s.ws()
    if (body[s.i] === 0x7b) envelope(s, () => {})
    else s.value(0)
    s.ws()
    if (s.i !== body.length) invalid(`unexpected byte at offset ${s.i}`)
  } catch (err) {
    if (err instanceof Invalid)
      throw new ApiError('invalid_json', `The request body is not valid JSON: ${err.message}.`)
    throw err
  }
  const v = JSON.parse(Buffer.from(body.buffer, body.byteOffset, body.length).toString('utf8'))
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    throw new ApiError('invalid_request', 'The request body must be a JSON object.')
  }
  return v
}

/** Where a member's or element's JSON text lies in a body, and its whitespace outside strings. */
export interface Span {
  start: number
  end: number
  spaces: number
}

function checked<T>(fn: () => T): T {
  try {
    return fn()
  } catch (err) {
    if (err instanceof Invalid)
      throw new ApiError('invalid_json', `The request body is not valid JSON: ${err.message}.`)
    throw err
  }
}

/**
 * Checks a whole body as strict JSON and returns its top-level members' spans, or undefined
 * when it is not an object. A member given twice is refused (invalid_json).
 */
export function bodyMembers(body: Uint8Array): Map<string, Span> | undefined {
  return checked(() => {
    const s = new Scanner(body)
    s.ws()
    if (body[s.i] !== 0x7b) {
      s.value(0)
      s.ws()
      if (s.i !== body.length) invalid(`unexpected byte at offset ${s.i}`)
      return undefined
    }
    const out = new Map<string, Span>()
    envelope(s, (name, start, end, spaces) => out.set(name, { start, end, spaces }))
    s.ws()
    if (s.i !== body.length) invalid(`unexpected byte after the body at offset ${s.i}`)
    return out
  })
}

/** The members of the object at `at` (a checked body), or undefined when it is no object. */
export function objectMembers(body: Uint8Array, at: Span): Map<string, Span> | undefined {
  if (body[at.start] !== 0x7b) return undefined
  return checked(() => {
    const s = new Scanner(body)
    s.i = at.start
    const out = new Map<string, Span>()
    envelope(s, (name, start, end, spaces) => out.set(name, { start, end, spaces }))
    return out
  })
}

/** The elements of the array at `at` (a checked body), or undefined when it is no array. */
export function arrayElements(body: Uint8Array, at: Span): Span[] | undefined {
  if (body[at.start] !== 0x5b) return undefined
  return checked(() => {
    const s = new Scanner(body)
    s.i = at.start + 1
    const out: Span[] = []
    s.ws()
    if (body[s.i] === 0x5d) return out
    for (;;) {
      const start = s.i
      const before = s.spaces
      s.value(1)
      out.push({ start, end: s.i, spaces: s.spaces - before })
      s.ws()
      const c = body[s.i++]
      if (c === 0x5d) return out
      s.ws()
    }
  })
}

/** A span's JSON text without insignificant whitespace (a view when it has none). */
export function spanText(body: Uint8Array, at: Span): Buffer {
  return at.spaces === 0
    ? Buffer.from(body.buffer, body.byteOffset + at.start, at.end - at.start)
    : minify(body, at.start, at.end, at.spaces)
}

/** The text of a span holding a JSON string, or undefined when it holds something else. */
export function spanString(body: Uint8Array, at: Span): string | undefined {
  if (body[at.start] !== 0x22) return undefined
  return JSON.parse(spanText(body, at).toString('utf8')) as string
}

/** The span's literal when it is true, false or null. */
export function spanLiteral(body: Uint8Array, at: Span): boolean | null | undefined {
  const c = body[at.start]
  if (c === 0x74) return true
  if (c === 0x66) return false
  if (c === 0x6e) return null
  return undefined
}

/** Metadata as PUT and PATCH take it: an object's text (at most 1 KiB as sent) or null. */
export function metadataText(body: Uint8Array, at: Span): Buffer | null {
  if (spanLiteral(body, at) === null) return null
  if (body[at.start] !== 0x7b)
    throw new ApiError('invalid_metadata', '"metadata" must be a JSON object or null.')
  if (at.end - at.start > MAX_METADATA_BYTES) {
    throw new ApiError(
      'invalid_metadata',
      `"metadata" is ${at.end - at.start} bytes of JSON; at most ${MAX_METADATA_BYTES} are kept.`,
    )
  }
  return spanText(body, at)
}
