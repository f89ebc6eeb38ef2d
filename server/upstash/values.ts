// How Redis strings and Cairn's JSON values meet. A Redis string is kept as a JSON string
// value (a number SET through Redis is the string "42"); a value stored through /v1 that is
// not a string reads as its JSON text. Integers for INCR are JSON integers or strings of one,
// within Redis's 64-bit range, and INCR stores a JSON integer.
import { notInteger, RedisError } from './errors.js'

const QUOTE = 0x22
const BACKSLASH = 0x5c

/** The JSON text that stores a Redis string. */
export const storedOf = (s: string): Buffer => Buffer.from(JSON.stringify(s))

/** The Redis string a stored value stands for. */
export function textOf(v: Buffer): string {
  if (v[0] === QUOTE) return JSON.parse(v.toString('utf8')) as string
  return v.toString('utf8')
}

/** The Redis string's length in bytes. */
export function byteLength(v: Buffer): number {
  if (v[0] !== QUOTE) return v.length
  if (v.indexOf(BACKSLASH) < 0) return v.length - 2
  return Buffer.byteLength(textOf(v))
}

export const INT64_MIN = -(2n ** 63n)
export const INT64_MAX = 2n ** 63n - 1n
const INTEGER = /^-?(0|[1-9][0-9]*)$/

/** An argument as Redis reads an integer (64-bit, no sign but "-", no leading zeros). */
export function parseInteger(s: string): bigint {
  if (s.length > 20 || !INTEGER.test(s)) throw notInteger()
  const n = BigInt(s)
  if (n < INT64_MIN || n > INT64_MAX) throw notInteger()
  return n
}

/** parseInteger as a JavaScript number (for times and counts, where 2^53 is plenty). */
export const parseNumber = (s: string): number => Number(parseInteger(s))

/** A stored value as INCR takes it: a JSON integer or a string of one; else the Redis error. */
export function storedInteger(v: Buffer): bigint {
  return parseInteger(v[0] === QUOTE ? textOf(v) : v.toString('latin1'))
}

const FLOAT = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/

/** A float as INCRBYFLOAT reads one (the argument or the stored value). */
export function parseFloatArg(s: string, what = 'ERR value is not a valid float'): number {
  if (!FLOAT.test(s)) {
    const l = s.toLowerCase()
    if (l === 'inf' || l === '+inf' || l === '-inf' || l === 'infinity') {
      throw new RedisError('ERR increment would produce NaN or Infinity')
    }
    throw new RedisError(what)
  }
  return Number(s)
}

/**
 * A float's text as Redis writes INCRBYFLOAT's result: at most 17 significant digits of a
 * long double, trailing zeros dropped, never an exponent. A double has fewer good digits, so
 * 15 are kept: 10.5 + 0.1 is "10.6" here as there.
 */
export function floatText(n: number): string {
  const rounded = Number(n.toPrecision(15))
  const s = String(rounded)
  if (!s.includes('e')) return s === '-0' ? '0' : s
  return rounded.toLocaleString('en-US', { useGrouping: false, maximumFractionDigits: 20 })
}
