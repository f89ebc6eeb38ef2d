// The rules a caller's arguments must meet: namespace names, keys, expiry options, the
// version a conditional write expects, listing options. Each throws INVALID_ARGUMENT (or
// answers the CONFLICT) before anything is staged, so a write is checked whole first.
import { EngineError, fail } from './errors.js'
import { isWellFormed } from './utf8.js'

const MAX_KEY_BYTES = 512
const MAX_NAMESPACE_BYTES = 512

export function checkName(ns: string): void {
  if (typeof ns !== 'string' || ns.length === 0 || Buffer.byteLength(ns) > MAX_NAMESPACE_BYTES) {
    fail('INVALID_ARGUMENT', `a namespace name is 1 to ${MAX_NAMESPACE_BYTES} UTF-8 bytes`)
  }
  // Stored as UTF-8 (NAMESPACES): a lone surrogate has no UTF-8 form, and would come back
  // as U+FFFD, another name.
  if (!isWellFormed(ns)) fail('INVALID_ARGUMENT', 'a namespace name holds a lone surrogate')
}

/** A key's length in UTF-8 bytes, once it is found to be one. */
export function keyBytes(key: string): number {
  if (typeof key !== 'string') fail('INVALID_ARGUMENT', 'key must be a string')
  const n = key.length * 3 <= MAX_KEY_BYTES ? utf8Length(key) : Buffer.byteLength(key)
  if (n === 0 || n > MAX_KEY_BYTES)
    fail('INVALID_ARGUMENT', `a key is 1 to ${MAX_KEY_BYTES} UTF-8 bytes, got ${n}`)
  // Keys are kept and ordered as UTF-8: a lone surrogate has no UTF-8 form.
  if (n !== key.length && !isWellFormed(key))
    fail('INVALID_ARGUMENT', 'a key is Unicode text: it holds a lone surrogate')
  return n
}

/** A key to read by: any string (one that was never written is simply not found). */
export function checkKey(key: string): void {
  if (typeof key !== 'string') fail('INVALID_ARGUMENT', 'key must be a string')
}

function utf8Length(s: string): number {
  let n = 0
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c < 0x80) n++
    else if (c < 0x800) n += 2
    else if (c >= 0xd800 && c < 0xdc00 && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1)
      if (d >= 0xdc00 && d < 0xe000) {
        n += 4
        i++
      } else n += 3
    } else n += 3
  }
  return n
}

/** The expiry a write's options give (ms since the Unix epoch), 0 for none. */
export function expiry(
  now: number,
  ttlMs: number | undefined,
  expiresAt: number | undefined,
): number {
  if (ttlMs !== undefined && expiresAt !== undefined)
    fail('INVALID_ARGUMENT', 'give ttlMs or expiresAt, not both')
  if (ttlMs !== undefined) {
    if (typeof ttlMs !== 'number' || !Number.isFinite(ttlMs) || ttlMs <= 0) {
      fail('INVALID_ARGUMENT', 'ttlMs must be a positive number of milliseconds')
    }
    return now + Math.ceil(ttlMs)
  }
  if (expiresAt !== undefined) {
    if (typeof expiresAt !== 'number' || !Number.isFinite(expiresAt) || expiresAt <= 0) {
      fail('INVALID_ARGUMENT', 'expiresAt must be milliseconds since the Unix epoch')
    }
    return expiresAt
  }
  return 0
}

export function checkIfVersion(ifVersion: unknown): void {
  if (ifVersion !== null && typeof ifVersion !== 'number') {
    fail('INVALID_ARGUMENT', 'ifVersion must be a number or null')
  }
}

export function checkDelta(delta: number): void {
  if (typeof delta !== 'number' || !Number.isFinite(delta)) {
    fail('INVALID_ARGUMENT', 'delta must be a finite number')
  }
}

/** The CONFLICT to answer unless the key is at `expected` (null: absent; `current` -1). */
export function conflictOf(
  key: string,
  current: number,
  expected: number | null,
): EngineError | undefined {
  const now = current < 0 ? null : current
  if (now === expected) return undefined
  return new EngineError('CONFLICT', `${key}: version is ${now}, expected ${expected}`)
}

/** list()'s options, checked. */
export function checkListOptions(prefix: string, after: string | undefined, limit: number): void {
  if (typeof prefix !== 'string') fail('INVALID_ARGUMENT', 'prefix must be a string')
  if (after !== undefined && typeof after !== 'string')
    fail('INVALID_ARGUMENT', 'after must be a string')
  if (!isWellFormed(prefix) || (after !== undefined && !isWellFormed(after)))
    fail('INVALID_ARGUMENT', 'prefix and after are Unicode text: one holds a lone surrogate')
  if (!Number.isInteger(limit) || limit < 1)
    fail('INVALID_ARGUMENT', 'limit must be a positive integer')
}

/** listAt()'s key bounds, checked. */
export function checkBounds(bounds: unknown[]): void {
  for (const k of bounds)
    if (typeof k === 'string' && !isWellFormed(k))
      fail('INVALID_ARGUMENT', 'prefix, start, end and after are Unicode text')
}

/** A history window's setting, checked for its shape (windows.ts checks its numbers). */
export function checkHistorySetting(setting: unknown): void {
  if (setting === null || typeof setting !== 'object')
    fail('INVALID_ARGUMENT', 'a history window is { seconds, bytes }')
}
