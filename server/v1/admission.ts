// The steps every API request on an account takes before its operation, written once for
// /v1 (handler.ts) and /upstash (upstash/route.ts), which differ only in their sentences and
// in how the key is sent: a missing or unknown key is counted against the client's address
// and refused, a known one is put on the call, and the account's token bucket admits or
// refuses the request.
import type { Context } from '../context.js'
import { requestAddress } from '../http/address.js'
import type { HttpRequest } from '../http/uws.js'
import type { ApiKey } from '../services/accounts.js'
import type { Bucket } from '../services/limits.js'
import type { Call } from './call.js'

/** `Authorization: Bearer <key>`. */
export const BEARER = /^bearer\s+(\S+)\s*$/i
/** How often a key's last-used time is refreshed: finer would mean more writes, not more use. */
const LAST_USED_STEP_MS = 60_000

/**
 * Answers a request without a valid API key: 429 once the client's address has sent too
 * many such requests (guessing keys is slow), otherwise 401 with `message`.
 */
export function refuseUnknownKey(
  ctx: Context,
  call: Call,
  req: HttpRequest,
  now: number,
  message: string,
): void {
  const b = ctx.badKeys.take(requestAddress(call.res, req, ctx.config.trustProxy), now)
  if (!b.ok) {
    return call.fail(
      'rate_limited',
      'Too many requests with missing or wrong API keys from this address.',
      `\r\nRetry-After: ${b.retryAfter}`,
    )
  }
  call.fail('unauthorized', message)
}

/** Puts the caller on the call, and refreshes its key's last-used time once a minute at most. */
export function identify(ctx: Context, call: Call, key: ApiKey, secret: string, now: number): void {
  call.key = key
  call.secret = secret
  call.account = key.account
  if (now - key.lastUsedMs >= LAST_USED_STEP_MS) ctx.accounts.touch(key, now)
}

/** Puts the bucket's figures on the call, for its RateLimit headers (none without a limit). */
export function showBucket(call: Call, b: Bucket): void {
  if (b.limit >= 0) {
    call.limit = b.limit
    call.remaining = b.remaining
    call.reset = b.reset
  }
}

/** Puts the bucket's figures on the call; false once it has answered 429. */
export function admitBucket(call: Call, b: Bucket): boolean {
  showBucket(call, b)
  if (b.ok) return true
  call.fail('rate_limited', undefined, `\r\nRetry-After: ${b.retryAfter}`)
  return false
}
