// What the API answers when storage refuses for a reason of its own (a full disk, a failing
// disk, damaged data), so /v1, the dashboard and the operator endpoint say the same thing.
// The engine names the file and the cause in its message; that stays in the log, because a
// tenant has no business learning the server's paths.
import { ApiError, type ContractError } from '../wire/errors.js'

/** Seconds a client should wait before retrying a write the storage could not take. */
export const STORAGE_RETRY_AFTER = 5

/** The API error for a storage refusal, or undefined when `err` is not one. */
export function storageFault(err: unknown): ContractError | undefined {
  switch ((err as { code?: unknown } | null)?.code) {
    case 'NO_SPACE':
      return new ApiError(
        'insufficient_storage',
        'The server has run out of disk space; reads work, writes resume once space is freed.',
        { 'Retry-After': String(STORAGE_RETRY_AFTER) },
      ) as ContractError
    case 'IO_ERROR':
      return new ApiError(
        'unavailable',
        'Storage cannot take this request for the moment (a failing disk, or a storage node down or failing over); try again shortly.',
        { 'Retry-After': String(STORAGE_RETRY_AFTER) },
      ) as ContractError
    case 'CORRUPT':
      return new ApiError(
        'internal_error',
        'The stored data for this request is damaged. The operator can recover every intact record with `cairn repair`.',
      ) as ContractError
    default:
      return undefined
  }
}
