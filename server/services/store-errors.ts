// The one place where a store's refusal becomes the API's error. Stores reject with a code
// of their own (store/types.ts, StoreErrorCode); /v1, the dashboard and the operator
// endpoint all ask here what that means to a caller, so a new code is mapped once.
import { ApiError, noSuchNamespace, opError } from '../wire/errors.js'

/** The store's code on an error, if it carries one. */
export const storeCode = (err: unknown): string | undefined =>
  (err as { code?: unknown } | null)?.code as string | undefined

/** A namespace dropped while the request used it. */
export const isGone = (err: unknown) => storeCode(err) === 'NAMESPACE_NOT_FOUND'

/** A condition (ifVersion, a transaction's check) that did not hold. */
export const isConflict = (err: unknown) => storeCode(err) === 'CONFLICT'

/**
 * The ApiError a store's refusal means, or the error itself when it is none of them (a
 * storage fault, a bug: storage-faults.ts and the responders deal with those). A transaction's
 * refusal names its op (`index`).
 */
export function apiErrorOf(err: unknown, namespace?: string): unknown {
  if (err instanceof ApiError) return err
  const index = (err as { index?: unknown } | null)?.index
  const at = typeof index === 'number' ? index : undefined
  const made = (code: Parameters<typeof opError>[0], message?: string) =>
    at === undefined ? new ApiError(code, message) : opError(code, at, message)
  switch (storeCode(err)) {
    case 'NAMESPACE_NOT_FOUND':
      return new ApiError(
        'namespace_not_found',
        namespace === undefined ? undefined : noSuchNamespace(namespace),
      )
    case 'CONFLICT':
      return made('precondition_failed')
    case 'NOT_A_NUMBER':
      return made('not_a_number')
    case 'KEY_NOT_FOUND':
      return made('key_not_found')
    case 'VALUE_TOO_LARGE':
      return made(
        'value_too_large',
        'The increment would make the value larger than the plan allows.',
      )
    default:
      return err
  }
}
