// What every store's transactions share: the errors they reject with and the integer rule
// for increments (the Redis backend applies the same rule in Lua; docs/redis.md).
import type { StoreErrorCode } from './types.js'

/** An integer as the contract's increment accepts it: no sign but `-`, no leading zeros. */
export const INTEGER_TEXT = /^-?(0|[1-9][0-9]*)$/

/** The codes a transaction's refusal carries, with the op's index (types.ts, StoreErrorCode). */
export type TxErrorCode = Extract<
  StoreErrorCode,
  'CONFLICT' | 'NOT_A_NUMBER' | 'KEY_NOT_FOUND' | 'VALUE_TOO_LARGE'
>

export interface TxError extends Error {
  code: TxErrorCode
  /** The 0-based position of the op that failed. */
  index: number
}

export function txError(code: TxErrorCode, index: number, message: string): TxError {
  return Object.assign(new Error(message), { code, index })
}

/** The stored integer plus `by`, exactly; undefined when the text is not an integer. */
export function addInteger(text: string | undefined, by: bigint): bigint | undefined {
  if (text === undefined) return by
  if (!INTEGER_TEXT.test(text)) return undefined
  return BigInt(text) + by
}
