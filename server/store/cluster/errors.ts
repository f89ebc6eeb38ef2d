// Redis's answers as the store's error codes (types.ts): the scripts' own refusals keep
// their names (a transaction's carry the failing op's index: "CONFLICT 2" is err.index 2);
// a full Redis (maxmemory) is a full disk's NO_SPACE; anything about reaching the cluster
// (a closed connection, a cluster down or failing over past the retries) is IO_ERROR, which
// the API answers with 503 and Retry-After.
import type { StoreErrorCode } from '../types.js'

const OWN: ReadonlySet<string> = new Set<StoreErrorCode>([
  'CONFLICT',
  'NOT_A_NUMBER',
  'KEY_NOT_FOUND',
  'NAMESPACE_NOT_FOUND',
  'INVALID_ARGUMENT',
  'IO_ERROR',
  'VALUE_TOO_LARGE',
  'HISTORY_EXPIRED',
  'INVALID_POINT',
])

export function storeError(err: unknown): Error {
  const e = err as { message?: string; code?: string }
  if (e?.code && OWN.has(e.code)) return err as Error
  const message = String(e?.message ?? err)
  // A script's error_reply arrives as "ERR CONFLICT" on some Redis versions, "CONFLICT" on others.
  const words = message.replace(/^ERR /, '').split(/\s/, 2)
  const first = words[0]!
  const code = OWN.has(first) ? first : first === 'OOM' ? 'NO_SPACE' : 'IO_ERROR'
  const out = Object.assign(new Error(code === 'IO_ERROR' ? `redis: ${message}` : message), {
    code,
  })
  if (code !== 'IO_ERROR' && /^\d+$/.test(words[1] ?? ''))
    Object.assign(out, { index: Number(words[1]), message: `${code} at op ${words[1]}` })
  return out
}

/** An error about reaching the cluster, as the store reports it (the API's 503). */
export const unavailable = (message: string): Error =>
  Object.assign(new Error(message), { code: 'IO_ERROR' })

/** Whether `err` is ioredis's for a command its node did not answer within ANSWER_MS (connect.ts). */
export const timedOut = (err: unknown): boolean =>
  (err as Error | null)?.message === 'Command timed out'
