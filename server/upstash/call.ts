// An /upstash request: /v1's Call (one cork per answer, CORS, X-Request-Id, RateLimit-*,
// usage and metrics as the answer goes out), with errors in Upstash's form: `{"error": "..."}`,
// a string that begins with its kind as Redis's errors do.
import { Call } from '../v1/call.js'
import type { ErrorCode } from '../wire/errors.js'
import { ERRORS } from '../wire/errors.js'
import { errorText } from './reply.js'

const KIND: Partial<Record<ErrorCode, string>> = {
  unauthorized: 'WRONGPASS',
  forbidden: 'NOPERM',
}

export class UpstashCall extends Call {
  protected override errorBody(code: ErrorCode, message?: string): string {
    return errorText(`${KIND[code] ?? 'ERR'} ${message ?? ERRORS[code].message}`)
  }
}
