// cairn-client: the public names.
export { Cairn } from './client.js'
export {
  AuthError,
  BadRequestError,
  CairnError,
  type CairnErrorInit,
  ConflictError,
  InvalidResponseError,
  NetworkError,
  NotFoundError,
  PayloadTooLargeError,
  QuotaExceededError,
  RateLimitError,
  ServerError,
  TimeoutError,
} from './errors.js'
export type { BigIntMode } from './json.js'
export type { RetryEvent, RetryMode, RetryOptions } from './retry.js'
export type { FetchLike } from './transport.js'
export type * from './types.js'
