// The checks /v1's operations make before their work, each returning the refusal it answers
// with (refusal.ts) rather than answering, and the namespace lookup they share. The entry,
// history, listing, transaction and import routes all use them.
import type { ApiKey, NamespaceInfo } from '../services/accounts.js'
import { noSuchNamespace } from '../wire/errors.js'
import type { Call } from './call.js'
import { type Refusal, refusal } from './refusal.js'

/** The refusal of an Entry route's key that does not decode (wire/keys.ts decodeKey). */
export const INVALID_KEY = refusal(
  'invalid_key',
  'A key is 1 to 512 bytes of UTF-8 after percent-decoding, without control characters or "." and ".." segments.',
)
const READ_ONLY = refusal('forbidden', 'This API key may only read.')

/** The 403 for an API key that may not use the namespace (or write, when `write`). */
export function useRefusal(k: ApiKey, ns: string, write: boolean): Refusal | undefined {
  if (write && !k.canWrite) return READ_ONLY
  if (!k.allows(ns)) return refusal('forbidden', `This API key may not use namespace "${ns}".`)
  return undefined
}

/**
 * The 404 namespace_not_found when the account's snapshot tells at once that the namespace is
 * missing: a request with a body is refused before the body is read. Where the store must be
 * asked the body is read first (uWebSockets.js hands a body's chunks only to a reader
 * registered before the handler returns), and withNamespace refuses it after.
 */
export function missingRefusal(call: Call, ns: string): Refusal | undefined {
  if (call.ctx.accounts.namespace(call.account!, ns)) return undefined
  return refusal('namespace_not_found', noSuchNamespace(ns))
}

/**
 * Calls `next` with the caller's namespace (at once when the account's snapshot has it),
 * or answers 404 namespace_not_found.
 */
export function withNamespace(call: Call, ns: string, next: (info: NamespaceInfo) => void): void {
  const found = call.ctx.accounts.namespace(call.account!, ns)
  const go = (info: NamespaceInfo | undefined) => {
    if (info === undefined) return call.fail('namespace_not_found', noSuchNamespace(ns))
    next(info)
  }
  if (!(found instanceof Promise)) return go(found)
  call.async()
  found.then(go, (err) => call.error(err))
}
