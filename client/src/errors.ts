// Every failure the client reports is a CairnError, so one `instanceof` check (or the
// `code` string) is enough to handle it; the subclasses group the statuses callers react
// to differently.

/** Fields shared by every {@link CairnError}. */
export interface CairnErrorInit {
  /**
   * HTTP status; 0 when no response arrived (network failure, timeout). A call the client
   * refuses before sending (a `.` key segment, NaN in a value) gets the 400 the server would
   * have answered.
   */
  status: number
  /** Machine-readable code, e.g. `key_not_found`; the server's code when it sent one. */
  code: string
  /** A sentence for a person. */
  message: string
  /**
   * The request's id, to quote when asking for help: the server's `X-Request-Id`, or the one
   * the client sent when something else (a proxy) answered; absent when no response arrived.
   */
  requestId?: string
  /** The underlying error, for network failures. */
  cause?: unknown
  /** For a transaction, the 0-based position of the op that failed, when the server names one. */
  index?: number
}

/** Base class of every error the client throws. */
export class CairnError extends Error {
  // Spelled out rather than taken from the constructor: minifiers rename classes.
  /** The class's name, e.g. `NotFoundError`. */
  override name = 'CairnError'
  /** HTTP status; 0 when no response arrived. A call refused before sending gets the server's 400. */
  readonly status: number
  /** Machine-readable code, e.g. `namespace_not_found`, `rate_limited`, `network_error`. */
  readonly code: string
  /**
   * The request's id: the server's `X-Request-Id`, or the one the client sent when something
   * else (a proxy) answered; undefined when no response arrived.
   */
  readonly requestId: string | undefined
  /**
   * For a failed transaction, the 0-based position of the op to blame (the first check,
   * condition or increment that failed, or the malformed op); undefined otherwise.
   */
  readonly index: number | undefined

  /** Builds an error; applications normally only catch these. */
  constructor(init: CairnErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause })
    this.status = init.status
    this.code = init.code
    this.requestId = init.requestId
    this.index = init.index
  }
}

/** 400: the request was malformed (bad key, bad TTL, bad cursor...). Also thrown before sending a request the server would refuse. */
export class BadRequestError extends CairnError {
  /** Always `'BadRequestError'`. */
  override name = 'BadRequestError'
}

/** 401 or 403: the API key is missing, unknown, revoked, or not allowed to do this. */
export class AuthError extends CairnError {
  /** Always `'AuthError'`. */
  override name = 'AuthError'
}

/** 403 `namespace_quota_exceeded` or `storage_quota_exceeded`: the plan's limit is reached; reads and deletes still work. */
export class QuotaExceededError extends CairnError {
  /** Always `'QuotaExceededError'`. */
  override name = 'QuotaExceededError'
}

/** 404: the namespace (or, for calls that do not answer `null`/`false`, the key or route) does not exist. */
export class NotFoundError extends CairnError {
  /** Always `'NotFoundError'`. */
  override name = 'NotFoundError'
}

/**
 * 409 (`namespace_exists`, `not_a_number`) or 412 (`precondition_failed`: `ifMatch`,
 * `ifNoneMatch` or a transaction's `check` did not hold; `index` names the op in a transaction).
 */
export class ConflictError extends CairnError {
  /** Always `'ConflictError'`. */
  override name = 'ConflictError'
}

/** 409 `not_a_number`: an increment met a stored value that is not an integer. A kind of {@link ConflictError}. */
export class NotANumberError extends ConflictError {
  /** Always `'NotANumberError'`. */
  override name = 'NotANumberError'
}

/** 400 `invalid_metadata`: metadata that is not a JSON object, or whose JSON text passes 1 KiB. */
export class InvalidMetadataError extends BadRequestError {
  /** Always `'InvalidMetadataError'`. */
  override name = 'InvalidMetadataError'
}

/** 400 `invalid_patch`: an empty patch, an unknown member, a non-integer `increment`, or two of `ttl`, `expiresAt`, `persist`. */
export class InvalidPatchError extends BadRequestError {
  /** Always `'InvalidPatchError'`. */
  override name = 'InvalidPatchError'
}

/** 400 `invalid_transaction`: no ops, more than 1,000, a malformed op, or a key written twice (`index` names the op). */
export class InvalidTransactionError extends BadRequestError {
  /** Always `'InvalidTransactionError'`. */
  override name = 'InvalidTransactionError'
}

/** 400 `invalid_prefix`: `deletePrefix` needs a non-empty prefix. */
export class InvalidPrefixError extends BadRequestError {
  /** Always `'InvalidPrefixError'`. */
  override name = 'InvalidPrefixError'
}

/**
 * 410 `history_expired`: a watch's `since` is older than the history the server keeps (list
 * again, then watch from the list's `version`), or a point (getAt, exportNamespace's `at`,
 * restore) is older than the namespace's history (`historyFrom` in namespaces()).
 */
export class HistoryExpiredError extends CairnError {
  /** Always `'HistoryExpiredError'`. */
  override name = 'HistoryExpiredError'
}

/**
 * `too_slow`: the server closed a watch whose consumer fell behind. `watch` resumes by
 * itself after it (it reaches you through `onReconnect`); a caller of the raw stream sees it.
 */
export class TooSlowError extends CairnError {
  /** Always `'TooSlowError'`. */
  override name = 'TooSlowError'
}

/** 413: the value is larger than the plan allows. */
export class PayloadTooLargeError extends CairnError {
  /** Always `'PayloadTooLargeError'`. */
  override name = 'PayloadTooLargeError'
}

/** 413 `transaction_too_large`: the transaction's body passes the plan's `maxValueBytes` plus 10 MiB. */
export class TransactionTooLargeError extends PayloadTooLargeError {
  /** Always `'TransactionTooLargeError'`. */
  override name = 'TransactionTooLargeError'
}

/** 429: too many requests (`rate_limited`) or the daily quota is used up (`quota_exceeded`). */
export class RateLimitError extends CairnError {
  /** Always `'RateLimitError'`. */
  override name = 'RateLimitError'
  /** Seconds the server asked to wait (`Retry-After`), when it said. */
  readonly retryAfter: number | undefined

  /** Builds the error with the server's `Retry-After` in seconds. */
  constructor(init: CairnErrorInit & { retryAfter?: number }) {
    super(init)
    this.retryAfter = init.retryAfter
  }
}

/** 429 `watch_limit`: the account has as many open watches as its plan allows; close one first. Never retried. */
export class WatchLimitError extends RateLimitError {
  /** Always `'WatchLimitError'`. */
  override name = 'WatchLimitError'
}

/** 5xx: the server (or a proxy in front of it) failed. */
export class ServerError extends CairnError {
  /** Always `'ServerError'`. */
  override name = 'ServerError'
  /** Seconds the server asked to wait (`Retry-After`, sent with 503 `unavailable`), when it said. */
  readonly retryAfter: number | undefined

  /** Builds the error with the server's `Retry-After` in seconds. */
  constructor(init: CairnErrorInit & { retryAfter?: number }) {
    super(init)
    this.retryAfter = init.retryAfter
  }
}

/** No response arrived: DNS, refused or reset connection, CORS refusal in a browser. `status` is 0. */
export class NetworkError extends CairnError {
  /** Always `'NetworkError'`. */
  override name = 'NetworkError'
}

/** No response arrived within `timeoutMs`. A kind of {@link NetworkError}; `code` is `timeout`. */
export class TimeoutError extends NetworkError {
  /** Always `'TimeoutError'`. */
  override name = 'TimeoutError'
}

/** The server answered with something that is not the JSON this client expects. */
export class InvalidResponseError extends CairnError {
  /** Always `'InvalidResponseError'`. */
  override name = 'InvalidResponseError'
}

/** Picks the error class for an HTTP error response (or an error sent inside a watch's stream). */
export function errorForResponse(
  status: number,
  code: string,
  message: string,
  requestId: string | undefined,
  retryAfter: number | undefined,
  index?: number,
): CairnError {
  const init: CairnErrorInit = { status, code, message, requestId }
  if (index !== undefined) init.index = index
  // Codes first: they name the new, narrower classes, each a kind of its status's class.
  switch (code) {
    case 'not_a_number':
      return new NotANumberError(init)
    case 'invalid_metadata':
      return new InvalidMetadataError(init)
    case 'invalid_patch':
      return new InvalidPatchError(init)
    case 'invalid_transaction':
      return new InvalidTransactionError(init)
    case 'invalid_prefix':
      return new InvalidPrefixError(init)
    case 'transaction_too_large':
      return new TransactionTooLargeError(init)
    case 'history_expired':
      return new HistoryExpiredError(init)
    case 'watch_limit':
      return new WatchLimitError({ ...init, retryAfter })
    case 'too_slow':
      return new TooSlowError(init)
  }
  if (status === 400) return new BadRequestError(init)
  if (
    status === 403 &&
    (code === 'namespace_quota_exceeded' || code === 'storage_quota_exceeded')
  ) {
    return new QuotaExceededError(init)
  }
  if (status === 401 || status === 403) return new AuthError(init)
  if (status === 404) return new NotFoundError(init)
  if (status === 409 || status === 412) return new ConflictError(init)
  if (status === 413) return new PayloadTooLargeError(init)
  if (status === 429) return new RateLimitError({ ...init, retryAfter })
  if (status >= 500) return new ServerError({ ...init, retryAfter })
  return new CairnError(init)
}
