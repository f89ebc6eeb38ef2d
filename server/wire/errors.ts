// Every error code the API answers with, its status and a default sentence for a person.
// The OpenAPI document's ErrorCode enum is checked against this table by the tests.

export const ERRORS = {
  invalid_json: { status: 400, message: 'The request body is not valid JSON.' },
  missing_value: { status: 400, message: 'The body must be a JSON object with a "value" member.' },
  invalid_ttl: {
    status: 400,
    message:
      'Give "ttl" as whole seconds (at least 1) or "expiresAt" as a future unix time in whole seconds, not both.',
  },
  invalid_key: { status: 400, message: 'The key is not valid.' },
  invalid_namespace: {
    status: 400,
    message:
      'A namespace name matches ^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$ and is not "namespaces" or "usage".',
  },
  invalid_limit: { status: 400, message: 'limit must be a whole number from 1 to 1000.' },
  invalid_cursor: { status: 400, message: 'The cursor is not one this listing handed out.' },
  invalid_request: { status: 400, message: 'The request is not valid.' },
  invalid_metadata: {
    status: 400,
    message: '"metadata" is a JSON object whose text is at most 1024 bytes, or null.',
  },
  invalid_patch: {
    status: 400,
    message:
      'A PATCH body is an object with one or more of "increment" (an integer), "ttl", "expiresAt", "persist": true and "metadata"; at most one of "ttl", "expiresAt" and "persist".',
  },
  invalid_transaction: {
    status: 400,
    message:
      'A transaction is {"ops": [...]} with 1 to 1000 ops, each an object naming its "op" (check, get, put, delete or increment), no key written twice.',
  },
  invalid_prefix: {
    status: 400,
    message: 'Deleting by prefix takes a non-empty "prefix"; without one nothing is deleted.',
  },
  invalid_point: {
    status: 400,
    message:
      "The point is not one of the namespace's: a version up to its current one, or an RFC 3339 time not in the future.",
  },
  invalid_range: {
    status: 400,
    message:
      'A range is start (inclusive) and end (exclusive), start not after end, both within the prefix when one is given.',
  },
  invalid_import: {
    status: 400,
    message:
      'Every import line is a JSON object with "key" and "value", and a valid key, metadata and expiresAt; the error names the line.',
  },
  unauthorized: {
    status: 401,
    message: 'Send a valid API key in the x-api-key header (or Authorization: Bearer).',
  },
  forbidden: { status: 403, message: 'This API key may not do that.' },
  namespace_quota_exceeded: {
    status: 403,
    message: 'The account already holds as many namespaces as its plan allows.',
  },
  storage_quota_exceeded: {
    status: 403,
    message: "This write would take the account past its plan's storage quota.",
  },
  not_found: { status: 404, message: 'There is no such route.' },
  key_not_found: { status: 404, message: 'There is no such key in this namespace.' },
  namespace_not_found: { status: 404, message: 'There is no such namespace.' },
  method_not_allowed: { status: 405, message: 'This route does not take that method.' },
  namespace_exists: { status: 409, message: 'A namespace with that name already exists.' },
  not_a_number: {
    status: 409,
    message: 'The stored value is not an integer, so it cannot be incremented.',
  },
  history_expired: {
    status: 410,
    message:
      "The namespace's change history no longer reaches back to that version; list again, then watch from the list's version.",
  },
  precondition_failed: {
    status: 412,
    message: 'The key is not at the version the request expects.',
  },
  value_too_large: { status: 413, message: "The value is larger than the plan's maxValueBytes." },
  transaction_too_large: {
    status: 413,
    message: "A transaction's body may be at most the plan's maxValueBytes plus 10 MiB.",
  },
  import_too_large: { status: 413, message: 'An import body may be at most 1 GiB.' },
  unsupported_media_type: {
    status: 415,
    message: 'Send the body with Content-Type: application/json (or no Content-Type).',
  },
  rate_limited: { status: 429, message: 'Too many requests; wait for Retry-After seconds.' },
  quota_exceeded: {
    status: 429,
    message: "The account has used its plan's requests for today (UTC).",
  },
  spending_cap_reached: {
    status: 429,
    message: "This month's metered requests have reached the account's spending cap.",
  },
  watch_limit: {
    status: 429,
    message: 'The account already has as many open watches as its plan allows.',
  },
  internal_error: { status: 500, message: 'Something went wrong on our side.' },
  unavailable: { status: 503, message: 'The server is shutting down; try again shortly.' },
  insufficient_storage: {
    status: 507,
    message: 'The server has run out of disk space; reads work, writes resume once space is freed.',
  },
} as const satisfies Record<string, { status: number; message: string }>

export type ErrorCode = keyof typeof ERRORS

/**
 * Codes only a watch's stream carries (an error event after the stream opened), never an
 * HTTP status: the OpenAPI document's ErrorCode enum lists them beside the table's.
 */
export const STREAM_CODES = ['too_slow'] as const

/** Whether a code is one of the contract's table (the /v1 API answers only with those). */
export const isErrorCode = (code: string): code is ErrorCode => Object.hasOwn(ERRORS, code)

/**
 * The one error the services and adapters throw for a caller to read; the responders (/v1's
 * call.ts, http/pipeline.ts for the dashboard and the operator) turn it into the contract's
 * error body. Give a code of the table and its status and sentence come from there; the
 * dashboard, the operator endpoint and the command line also have codes of their own
 * (`account_exists`, `csrf_failed`, ...), given with their status.
 */
export class ApiError extends Error {
  readonly status: number
  readonly code: string
  readonly headers?: Record<string, string>

  /** The 0-based position of the transaction op to blame, where one is. */
  index?: number

  constructor(code: ErrorCode, message?: string, headers?: Record<string, string>)
  constructor(status: number, code: string, message: string, headers?: Record<string, string>)
  constructor(
    first: ErrorCode | number,
    second?: string,
    third?: string | Record<string, string>,
    fourth?: Record<string, string>,
  ) {
    if (typeof first === 'number') {
      super(third as string)
      this.status = first
      this.code = second!
      this.headers = fourth
    } else {
      super(second ?? ERRORS[first].message)
      this.status = ERRORS[first].status
      this.code = first
      this.headers = third as Record<string, string> | undefined
    }
  }
}

/** An ApiError whose code is one of the table's, so /v1 can answer with it as it is. */
export type ContractError = ApiError & { readonly code: ErrorCode }

/** Whether `err` is an ApiError /v1 answers with as it is (its code is the contract's). */
export const isContractError = (err: unknown): err is ContractError =>
  err instanceof ApiError && isErrorCode(err.code)

/** The sentence for a namespace the caller named that does not exist. */
export const noSuchNamespace = (name: string) => `There is no namespace "${name}".`

export function errorStatus(code: ErrorCode): number {
  return ERRORS[code].status
}

/** Error bodies with the default message, made once: errors are common answers (404s). */
const DEFAULT_TEXT = new Map(
  Object.entries(ERRORS).map(([code, e]) => [
    code,
    JSON.stringify({ error: { code, message: e.message } }),
  ]),
)

/** The JSON text of an error body; `index` names a transaction's op. */
export function errorText(code: ErrorCode, message?: string, index?: number): string {
  if (index !== undefined)
    return `{"error":{"code":"${code}","message":${JSON.stringify(message ?? ERRORS[code].message)},"index":${index}}}`
  if (message === undefined || message === ERRORS[code].message) return DEFAULT_TEXT.get(code)!
  return `{"error":{"code":"${code}","message":${JSON.stringify(message)}}}`
}

/** An error body that names the import line to blame (1-based). */
export function lineErrorText(code: ErrorCode, message: string, line: number): string {
  return `{"error":{"code":"${code}","message":${JSON.stringify(message)},"line":${line}}}`
}

/** An ApiError that names the transaction op to blame. */
export function opError(code: ErrorCode, index: number, message?: string): ApiError {
  const err = new ApiError(code, message)
  err.index = index
  return err
}
