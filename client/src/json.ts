// JSON for stored values. The server returns values byte-exact, but JSON.parse turns an
// integer beyond 2^53 into the nearest double without a word. This parser gives such
// integers back as the caller chose; everything else behaves exactly like JSON.parse
// (including a member named `__proto__`, which stays an own property).

/**
 * How integers beyond ±(2^53 - 1), which a JS number cannot hold exactly, come back from `get`:
 * - `'bigint'` (default): as a `bigint`, so nothing is lost and `put` writes it back unchanged;
 * - `'string'`: as the decimal digits in a string;
 * - `'number'`: as the nearest number, losing precision (JSON.parse's behaviour).
 */
export type BigIntMode = 'bigint' | 'string' | 'number'

// An unsafe integer has at least 16 digits; text without such a run goes to JSON.parse.
const LONG_DIGITS = /\d{16}/

/** Parses JSON text, returning integers a number cannot hold exactly per `mode`. */
export function parseJson(text: string, mode: BigIntMode): unknown {
  if (mode === 'number' || !LONG_DIGITS.test(text)) return JSON.parse(text)
  return new Parser(text, mode).document()
}

const NUMBER = /-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y

class Parser {
  private i = 0
  constructor(
    private readonly s: string,
    private readonly mode: BigIntMode,
  ) {}

  document(): unknown {
    const v = this.value()
    this.ws()
    if (this.i !== this.s.length) this.fail()
    return v
  }

  private fail(): never {
    // Let JSON.parse word the error the way every JS developer knows it.
    JSON.parse(this.s)
    throw new SyntaxError(`Unexpected token in JSON at position ${this.i}`)
  }

  private ws(): void {
    const s = this.s
    while (this.i < s.length) {
      const c = s.charCodeAt(this.i)
      if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) break
      this.i++
    }
  }

  private value(): unknown {
    this.ws()
    const c = this.s[this.i]
    if (c === '{') return this.object()
    if (c === '[') return this.array()
    if (c === '"') return this.string()
    if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) return this.number()
    for (const [word, v] of [
      ['true', true],
      ['false', false],
      ['null', null],
    ] as const) {
      if (this.s.startsWith(word, this.i)) {
        this.i += word.length
        return v
      }
    }
    return this.fail()
  }

  private object(): Record<string, unknown> {
    const obj: Record<string, unknown> = {}
    this.i++
    this.ws()
    if (this.s[this.i] === '}') {
      this.i++
      return obj
    }
    for (;;) {
      this.ws()
      if (this.s[this.i] !== '"') this.fail()
      const key = this.string()
      this.ws()
      if (this.s[this.i] !== ':') this.fail()
      this.i++
      // defineProperty, not assignment: `obj.__proto__ = v` would change the prototype.
      Object.defineProperty(obj, key, {
        value: this.value(),
        writable: true,
        enumerable: true,
        configurable: true,
      })
      this.ws()
      const c = this.s[this.i++]
      if (c === '}') return obj
      if (c !== ',') this.fail()
    }
  }

  private array(): unknown[] {
    const arr: unknown[] = []
    this.i++
    this.ws()
    if (this.s[this.i] === ']') {
      this.i++
      return arr
    }
    for (;;) {
      arr.push(this.value())
      this.ws()
      const c = this.s[this.i++]
      if (c === ']') return arr
      if (c !== ',') this.fail()
    }
  }

  private string(): string {
    const start = this.i
    const s = this.s
    let j = start + 1
    for (;;) {
      if (j >= s.length) this.fail()
      const c = s.charCodeAt(j)
      if (c === 0x22) break
      j += c === 0x5c ? 2 : 1
    }
    this.i = j + 1
    return JSON.parse(s.slice(start, j + 1)) as string
  }

  private number(): number | bigint | string {
    NUMBER.lastIndex = this.i
    const m = NUMBER.exec(this.s)
    if (!m) return this.fail()
    const text = m[0]
    this.i += text.length
    const n = Number(text)
    if (m[1] !== undefined || m[2] !== undefined || Number.isSafeInteger(n)) return n
    return this.mode === 'bigint' ? BigInt(text) : text
  }
}

/**
 * JSON.stringify that also writes `bigint`s as plain JSON integers (JSON.stringify throws
 * on them) and -0 as `-0`, so a value read with `bigints: 'bigint'` is written back unchanged.
 * Returns undefined for a value JSON cannot represent at all (undefined, a function).
 * @throws TypeError for what JSON.stringify would silently change into something else (NaN
 *   and Infinity into `null`, a Map or Set into `{}`, an array's undefined, function or
 *   symbol into `null`, a member that is a function or symbol into nothing) and for circular
 *   structures.
 */
export function stringifyJson(value: unknown): string | undefined {
  let marker: string | undefined
  const text = JSON.stringify(value, function (this: unknown, key, v) {
    // In an array these become null; a member that is a function or symbol is left out. A
    // member that is undefined is left out too, as JSON has it: that is how an optional
    // member is written.
    const none = typeof v === 'function' || typeof v === 'symbol'
    if (key !== '' && (none || (v === undefined && Array.isArray(this)))) {
      throw new TypeError(
        Array.isArray(this)
          ? `element ${key} is ${typeof v}, which JSON would store as null`
          : `${where(key)} is a ${typeof v}, which JSON would leave out`,
      )
    }
    if (typeof v === 'number' && !Number.isFinite(v)) {
      throw new TypeError(`${where(key)} is ${v}, which JSON would store as null`)
    }
    if (v instanceof Map || v instanceof Set) {
      throw new TypeError(
        `${where(key)} is a ${v instanceof Map ? 'Map' : 'Set'}, which JSON would store as {}; convert it (Object.fromEntries, Array.from) first`,
      )
    }
    // JSON.stringify also writes -0 as 0; the server keeps -0, so keep it too.
    const negZero = v === 0 && 1 / v < 0
    if (typeof v !== 'bigint' && !negZero) return v
    marker ??= `\u0000cairn-num-${Math.random().toString(36).slice(2)}:`
    return marker + (negZero ? '-0' : v.toString())
  })
  if (marker === undefined || text === undefined) return text
  // The marker starts with U+0000, which JSON.stringify always escapes, so only our own
  // strings can match this pattern.
  const escaped = JSON.stringify(marker).slice(1, -1)
  return text.replace(new RegExp(`"${escaped.replace(/\\/g, '\\\\')}(-?\\d+)"`, 'g'), '$1')
}

function where(key: string): string {
  return key === '' ? 'the value' : `member ${JSON.stringify(key)}`
}

/**
 * A tree parsed with mode `'bigint'` as if it had been parsed with `mode`: for responses
 * parsed once exactly (so an increment's result keeps every digit) whose stored values
 * must still follow the client's `bigints` option.
 */
export function withBigIntMode(value: unknown, mode: BigIntMode): unknown {
  if (mode === 'bigint') return value
  if (typeof value === 'bigint') return mode === 'string' ? value.toString() : Number(value)
  if (Array.isArray(value)) return value.map((v) => withBigIntMode(v, mode))
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) {
      // defineProperty, not assignment, so a member named `__proto__` stays a member.
      Object.defineProperty(out, k, {
        value: withBigIntMode(v, mode),
        writable: true,
        enumerable: true,
        configurable: true,
      })
    }
    return out
  }
  return value
}

const INTEGER = /^-?(?:0|[1-9][0-9]*)$/

/**
 * The JSON text of an integer of any size given as a number (a safe integer), a bigint or a
 * string of decimal digits (`-?(0|[1-9][0-9]*)`, as the server takes it), or undefined when
 * it is none of those (a fraction, `1e3`, `NaN`, a number beyond 2^53 that has already lost
 * digits, `"+1"`, `"01"`).
 */
export function integerText(n: unknown): string | undefined {
  if (typeof n === 'bigint') return n.toString()
  if (typeof n === 'number') return Number.isSafeInteger(n) ? String(n) : undefined
  if (typeof n === 'string' && INTEGER.test(n)) return n === '-0' ? '0' : n
  return undefined
}

/** An integer from a parsed response (a number, a bigint or digits) as a bigint. */
export function toBigInt(v: unknown): bigint | undefined {
  if (typeof v === 'bigint') return v
  if (typeof v === 'number' && Number.isSafeInteger(v)) return BigInt(v)
  if (typeof v === 'string' && INTEGER.test(v)) return BigInt(v)
  return undefined
}
