// POST /{ns} bodies: a transaction, `{"ops": [op, ...]}`. Every op is checked here, before
// anything is read or written, so a malformed one is refused with its index and nothing
// applied. Values and metadata keep their JSON text exactly as sent.
import { ApiError, opError } from './errors.js'
import type { TxOp } from '../store/types.js'
import {
  type Span,
  arrayElements,
  bodyMembers,
  expiryOf,
  metadataText,
  objectMembers,
  spanLiteral,
  spanString,
  spanText,
} from './json-body.js'
import { validKey } from './keys.js'
import { integerOf } from './patch-body.js'

export const MAX_OPS = 1000

const FIELDS: Record<string, string[]> = {
  check: ['op', 'key', 'version'],
  get: ['op', 'key', 'metadata'],
  put: ['op', 'key', 'value', 'ttl', 'expiresAt', 'metadata', 'ifMatch', 'ifNoneMatch'],
  delete: ['op', 'key', 'ifMatch'],
  increment: ['op', 'key', 'by'],
}

/**
 * A version as a transaction names one: its exact digits. Versions are handed out without
 * leading zeros, so "07" can match nothing (-1 matches no entry).
 */
function versionOf(text: string | undefined): number | undefined {
  if (text === undefined || !/^[0-9]{1,16}$/.test(text)) return undefined
  return /^(0|[1-9][0-9]*)$/.test(text) ? Number(text) : -1
}

export interface TxBody {
  ops: TxOp[]
  /** Ops that write (put, delete, increment). */
  writes: number
}

export function parseTxBody(body: Uint8Array, maxValueBytes: number | null, nowMs: number): TxBody {
  const m = bodyMembers(body)
  const bad = (why: string) => new ApiError('invalid_transaction', why)
  if (m === undefined) throw bad('A transaction is a JSON object: {"ops": [...]}.')
  for (const name of m.keys())
    if (name !== 'ops') throw bad(`A transaction takes no member ${JSON.stringify(name)}.`)
  const opsSpan = m.get('ops')
  const elements = opsSpan && arrayElements(body, opsSpan)
  if (elements === undefined) throw bad('"ops" must be an array of ops.')
  if (elements.length === 0) throw bad('A transaction needs at least one op.')
  if (elements.length > MAX_OPS)
    throw bad(`A transaction holds at most ${MAX_OPS} ops; this one has ${elements.length}.`)
  const written = new Set<string>()
  const ops: TxOp[] = []
  let writes = 0
  elements.forEach((el, i) => {
    const op = parseOp(body, el, i, maxValueBytes, nowMs)
    if (op.op === 'put' || op.op === 'delete' || op.op === 'increment') {
      if (written.has(op.key))
        throw opError('invalid_transaction', i, `op ${i} writes ${JSON.stringify(op.key)} again.`)
      written.add(op.key)
      writes++
    }
    ops.push(op)
  })
  return { ops, writes }
}

function parseOp(
  body: Uint8Array,
  el: Span,
  i: number,
  maxValueBytes: number | null,
  nowMs: number,
): TxOp {
  const bad = (why: string) => opError('invalid_transaction', i, `op ${i}: ${why}`)
  const m = objectMembers(body, el)
  if (m === undefined) throw bad('an op is a JSON object.')
  const kindSpan = m.get('op')
  const kind = kindSpan && spanString(body, kindSpan)
  if (kind === undefined || !Object.hasOwn(FIELDS, kind))
    throw bad('"op" names check, get, put, delete or increment.')
  for (const name of m.keys())
    if (!FIELDS[kind]!.includes(name))
      throw bad(`a ${kind} takes no member ${JSON.stringify(name)}.`)
  const keySpan = m.get('key')
  const key = keySpan && spanString(body, keySpan)
  if (key === undefined) throw bad('"key" is a string.')
  if (!validKey(key))
    throw bad(
      'a key is 1 to 512 bytes of UTF-8, without control characters or "." and ".." segments.',
    )
  const versionAt = (name: string): number | undefined => {
    const s = m.get(name)
    if (s === undefined) return undefined
    const v = versionOf(spanString(body, s))
    if (v === undefined) throw bad(`"${name}" is a version: a string of digits.`)
    return v
  }
  switch (kind) {
    case 'check': {
      const s = m.get('version')
      if (s === undefined) throw bad('a check names the "version" it expects (null: absent).')
      if (spanLiteral(body, s) === null) return { op: 'check', key, version: null }
      return { op: 'check', key, version: versionAt('version')! }
    }
    case 'get': {
      const s = m.get('metadata')
      const meta = s === undefined ? false : spanLiteral(body, s)
      if (typeof meta !== 'boolean') throw bad('"metadata" is true or false.')
      return meta ? { op: 'get', key, metadata: true } : { op: 'get', key }
    }
    case 'put': {
      const v = m.get('value')
      if (v === undefined) throw bad('a put has a "value".')
      const value = spanText(body, v)
      if (maxValueBytes !== null && value.length > maxValueBytes)
        throw opError(
          'value_too_large',
          i,
          `op ${i}: the value is ${value.length} bytes of JSON; the plan allows ${maxValueBytes}.`,
        )
      const op: TxOp & { op: 'put' } = { op: 'put', key, value }
      const span = (n: string): [number, number] | undefined => {
        const s = m.get(n)
        return s && [s.start, s.end]
      }
      try {
        const exp = expiryOf(body, span('ttl'), span('expiresAt'), nowMs)
        if (exp.ttl !== undefined) op.ttlMs = exp.ttl * 1000
        if (exp.expiresAt !== undefined) op.expiresAt = exp.expiresAt * 1000
        const meta = m.get('metadata')
        if (meta) {
          const text = metadataText(body, meta)
          if (text !== null) op.metadata = text
        }
      } catch (err) {
        throw bad((err as Error).message)
      }
      const ifMatch = versionAt('ifMatch')
      const inm = m.get('ifNoneMatch')
      if (inm !== undefined && spanString(body, inm) !== '*')
        throw bad('"ifNoneMatch" can only be "*".')
      if (ifMatch !== undefined && inm !== undefined)
        throw bad('give "ifMatch" or "ifNoneMatch", not both.')
      if (ifMatch !== undefined) op.ifVersion = ifMatch
      if (inm !== undefined) op.ifVersion = null
      return op
    }
    case 'delete': {
      const ifMatch = versionAt('ifMatch')
      return ifMatch === undefined
        ? { op: 'delete', key }
        : { op: 'delete', key, ifVersion: ifMatch }
    }
    default: {
      const s = m.get('by')
      const by = s && integerOf(body, s)
      if (by === undefined) throw bad('"by" is an integer literal (not 1.0 or 1e3).')
      return { op: 'increment', key, by }
    }
  }
}
