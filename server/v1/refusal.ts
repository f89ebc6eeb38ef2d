// What a /v1 check refuses a request with. The checks (entries.ts, body.ts) return one instead
// of answering, so an operation chains them (`a ?? b ?? c`) and answers in one place
// (`call.refuse`), and the checks need nothing of the request but what they read.
import type { ErrorCode } from '../wire/errors.js'

export interface Refusal {
  readonly code: ErrorCode
  readonly message?: string
}

export const refusal = (code: ErrorCode, message?: string): Refusal => ({ code, message })
