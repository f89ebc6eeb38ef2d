// PATCH /{ns}/{key} bodies: `{"increment"?, "ttl"?, "expiresAt"?, "persist"?, "metadata"?}`.
// The increment is read from its JSON text as a BigInt, so integers of any size stay exact.
import { ApiError } from './errors.js'
import { INTEGER_TEXT } from '../store/tx.js'
import type { TxOp } from '../store/types.js'
import {
  type Span,
  bodyMembers,
  expiryOf,
  metadataText,
  spanLiteral,
  spanText,
} from './json-body.js'

export interface PatchBody {
  increment?: bigint
  /** Seconds. */
  ttl?: number
  /** Unix seconds. */
  expiresAt?: number
  persist?: true
  /** undefined: unchanged; null: removed. */
  metadata?: Buffer | null
}

const MEMBERS = new Set(['increment', 'ttl', 'expiresAt', 'persist', 'metadata'])

/** An integer literal's value (any size), or undefined when the span holds anything else. */
export function integerOf(body: Uint8Array, at: Span): bigint | undefined {
  const text = spanText(body, at).toString('latin1')
  return INTEGER_TEXT.test(text) ? BigInt(text) : undefined
}

const span = (s: Span | undefined): [number, number] | undefined => s && [s.start, s.end]

export function parsePatchBody(body: Uint8Array, nowMs: number): PatchBody {
  const m = bodyMembers(body)
  if (m === undefined) throw new ApiError('invalid_patch', 'A PATCH body is a JSON object.')
  if (m.size === 0)
    throw new ApiError('invalid_patch', 'A PATCH body changes something: it cannot be empty.')
  for (const name of m.keys())
    if (!MEMBERS.has(name))
      throw new ApiError('invalid_patch', `PATCH takes no member ${JSON.stringify(name)}.`)
  const out: PatchBody = {}
  const inc = m.get('increment')
  if (inc) {
    const n = integerOf(body, inc)
    if (n === undefined)
      throw new ApiError('invalid_patch', '"increment" is an integer literal (not 1.0 or 1e3).')
    out.increment = n
  }
  const persist = m.get('persist')
  if (persist) {
    if (spanLiteral(body, persist) !== true)
      throw new ApiError('invalid_patch', '"persist" can only be true.')
    out.persist = true
  }
  if (Number(m.has('ttl')) + Number(m.has('expiresAt')) + Number(m.has('persist')) > 1)
    throw new ApiError('invalid_patch', 'Give at most one of "ttl", "expiresAt" and "persist".')
  Object.assign(out, expiryOf(body, span(m.get('ttl')), span(m.get('expiresAt')), nowMs))
  const meta = m.get('metadata')
  if (meta) out.metadata = metadataText(body, meta)
  return out
}

/** A PATCH body as the store's patch op on `key` (seconds become milliseconds). */
export function patchOp(key: string, p: PatchBody): TxOp & { op: 'patch' } {
  const op: TxOp & { op: 'patch' } = { op: 'patch', key }
  if (p.increment !== undefined) op.by = p.increment
  if (p.ttl !== undefined) op.ttlMs = p.ttl * 1000
  if (p.expiresAt !== undefined) op.expiresAt = p.expiresAt * 1000
  if (p.persist) op.persist = true
  if (p.metadata !== undefined) op.metadata = p.metadata
  return op
}
