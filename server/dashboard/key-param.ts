// The key a dashboard data route is about, in `?key=`: held to the rules a /v1 path is.
import type { Req } from '../http/pipeline.js'
import { ApiError } from '../wire/errors.js'
import { decodeKey } from '../wire/keys.js'

/** The key in `?key=`, held to the rules a /v1 path is (by encoding it as one). */
export function keyParam(req: Req): string {
  const raw = req.query.get('key') ?? ''
  let key: string | undefined
  try {
    key = decodeKey(encodeURIComponent(raw))
  } catch {
    key = undefined // a lone surrogate: not UTF-8
  }
  if (key === undefined) {
    throw new ApiError(
      'invalid_key',
      'A key is 1 to 512 bytes of UTF-8, without control characters or "." and ".." segments.',
    )
  }
  return key
}
