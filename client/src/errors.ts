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

  /** Builds an error; applications normally only catch these. */
  constructor(init: CairnErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause })
    this.status = init.status
    this.code = init.code
    this.requestId = init.requestId
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

/** 409 (`namespace_exists`) or 412 (`precondition_failed`: `ifMatch`/`ifNoneMatch` did not hold). */
export class ConflictError extends CairnError {
  /** Always `'ConflictError'`. */
  override name = 'ConflictError'
}

/** 413: the value is larger than the plan allows. */
export class PayloadTooLargeError extends CairnError {
  /** Always `'PayloadTooLargeError'`. */
  override name = 'PayloadTooLargeError'
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

/** 5xx: the server (or a proxy in front of it) failed. */
export class ServerError extends CairnError {
  /** Always `'ServerError'`. */
  override name = 'ServerError'
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

/** Picks the error class for an HTTP error response. */
export function errorForResponse(
  status: number,
  code: string,
  message: string,
  requestId: string | undefined,
  retryAfter: number | undefined,
): CairnError {
  const init = { status, code, message, requestId }
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
  if (status >= 500) return new ServerError(init)
  return new CairnError(init)
}
