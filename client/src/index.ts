// cairn-client: the public names.
export { Cairn } from './client.js'
export {
  AuthError,
  BadRequestError,
  CairnError,
  type CairnErrorInit,
  ConflictError,
  HistoryExpiredError,
  InvalidMetadataError,
  InvalidPatchError,
  InvalidPrefixError,
  InvalidResponseError,
  InvalidTransactionError,
  NetworkError,
  NotANumberError,
  NotFoundError,
  PayloadTooLargeError,
  QuotaExceededError,
  RateLimitError,
  ServerError,
  TimeoutError,
  TooSlowError,
  TransactionTooLargeError,
  WatchLimitError,
} from './errors.js'
export type { BigIntMode } from './json.js'
export type { RetryEvent, RetryMode, RetryOptions } from './retry.js'
export {
  MAX_TRANSACTION_OPS,
  Transaction,
  type TransactionResult,
  type TxCheckResult,
  type TxDeleteOptions,
  type TxDeleteResult,
  type TxGetOptions,
  type TxGetResult,
  type TxIncrementResult,
  type TxPutOptions,
  type TxPutResult,
  type TxResult,
} from './transaction.js'
export type { FetchLike } from './transport.js'
export type {
  EntryAt,
  HistoryOptions,
  HistoryPage,
  KeyVersion,
  Point,
  RestoreOptions,
  RestoreResult,
} from './history.js'
export type {
  ExportOptions,
  ImportOptions,
  ImportResult,
  ImportSource,
  PortableEntry,
  RangeOptions,
} from './portable.js'
export type * from './types.js'
export type { ReconnectEvent, WatchEvent, WatchOptions } from './watch.js'
