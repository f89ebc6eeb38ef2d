// The transaction builder: ops collected in order, sent as one `POST /{ns}` that the server
// applies all or nothing.
import { InvalidPatchError, InvalidTransactionError } from './errors.js'
import { type BigIntMode, integerText, toBigInt, withBigIntMode } from './json.js'
import { send, type TransportConfig } from './transport.js'
import type { CallOptions, Metadata } from './types.js'
import {
  bare,
  describeValue,
  invalid,
  metadataText,
  parseExact,
  rawText,
  unixSeconds,
  valueText,
} from './wire.js'

/** The most ops one transaction may hold. */
export const MAX_TRANSACTION_OPS = 1000

/** The result of a `check`: nothing to report (a failed check fails the whole transaction). */
export type TxCheckResult = Record<string, never>

/**
 * The result of a `get`: the entry as it was before the transaction's writes.
 * @typeParam T The value's type as the caller asserts it; nothing checks it at run time.
 */
export type TxGetResult<T = unknown> =
  | {
      found: true
      /** The value, parsed as `get` parses it. */
      value: T
      /** The entry's version. */
      version: string
      /** Unix seconds when it expires; absent when it has no TTL. */
      expiresAt?: number
      /** Its metadata (`null` when none); present only when the op asked for it. */
      metadata?: Metadata | null
    }
  | { found: false }

/** The result of a `put`. */
export interface TxPutResult {
  /** True when the key did not exist before. */
  created: boolean
  /** The version this write got. */
  version: string
}

/** The result of a `delete`: false when the key did not exist (which writes nothing). */
export interface TxDeleteResult {
  /** True when the key existed and was deleted. */
  deleted: boolean
}

/** The result of an `increment`. */
export interface TxIncrementResult {
  /** The new value, always a bigint, exact at any size. */
  value: bigint
  /** The version this write got. */
  version: string
}

/** Any op's result. */
export type TxResult =
  | TxCheckResult
  | TxGetResult
  | TxPutResult
  | TxDeleteResult
  | TxIncrementResult

/** Options of a transaction's `get`. */
export interface TxGetOptions {
  /** Also return the entry's metadata (`null` when it has none). */
  metadata?: boolean
}

/** Options of a transaction's `put` (as {@link PutOptions}, without a signal). */
export interface TxPutOptions {
  /** Seconds until the key expires (integer, at least 1). Not together with `expiresAt`. */
  ttl?: number
  /** When the key expires: unix seconds or a Date (rounded up). Not together with `ttl`. */
  expiresAt?: number | Date
  /** Metadata stored beside the value (a JSON object, at most 1 KiB); none when left out. */
  metadata?: Metadata | null
  /** Fail the transaction (412, with this op's index) unless the key's version is this one. */
  ifMatch?: string
  /** `'*'`: fail the transaction (412) if the key exists. */
  ifNoneMatch?: '*'
}

/** Options of a transaction's `delete`. */
export interface TxDeleteOptions {
  /** Fail the transaction (412, with this op's index) unless the key's version is this one. */
  ifMatch?: string
}

/** What `commit` resolves to. */
export interface TransactionResult<R> {
  /** The version of the transaction's last write, or the namespace's current one when it wrote nothing. */
  version: string
  /** One result per op, in the order they were added. */
  results: R
}

type OpKind = 'check' | 'get' | 'put' | 'delete' | 'increment'

/**
 * A transaction being built: each method appends one op and returns the builder, so calls
 * chain, and a chain's `commit()` result is typed op by op (`results[2]` of
 * `.check().get().increment()` is a {@link TxIncrementResult}). A builder filled in a loop
 * works too; its results are then typed as {@link TxResult}[].
 *
 * Nothing is sent before `commit()`. The server applies every op or none, in order, each
 * write at the next version. When an op fails, `commit` rejects with an error whose `index`
 * is that op's position: a ConflictError (`precondition_failed`) for a failed `check`,
 * `ifMatch` or `ifNoneMatch`, a NotANumberError for an `increment` of a value that is not an
 * integer, a PayloadTooLargeError for a value too large; an InvalidTransactionError for a
 * malformed op or a key written twice.
 *
 * @typeParam R The results of the ops added so far, as a tuple.
 */
export class Transaction<R extends TxResult[] = []> {
  readonly #cfg: TransportConfig
  readonly #bigints: BigIntMode
  readonly #namespace: string
  readonly #ops: { kind: OpKind; json: string }[] = []

  /** Made by {@link Cairn.transaction}; not meant to be constructed directly. */
  constructor(cfg: TransportConfig, bigints: BigIntMode, namespace: string) {
    this.#cfg = cfg
    this.#bigints = bigints
    this.#namespace = namespace
  }

  /** The namespace the transaction runs in. */
  get namespace(): string {
    return this.#namespace
  }

  /** How many ops have been added. */
  get size(): number {
    return this.#ops.length
  }

  /**
   * Fails the whole transaction (ConflictError `precondition_failed` with this op's `index`)
   * unless `key` is at exactly `version`, or, with `null`, unless it does not exist.
   */
  check(key: string, version: string | null): Transaction<[...R, TxCheckResult]> {
    if (version !== null && typeof version !== 'string') {
      throw new InvalidTransactionError({
        status: 400,
        code: 'invalid_transaction',
        message: `check takes a version (a string) or null for "absent"; got ${describeValue(version)}.`,
        index: this.#ops.length,
      })
    }
    return this.#add(
      'check',
      `{"op":"check","key":${JSON.stringify(key)},"version":${version === null ? 'null' : JSON.stringify(bare(version))}}`,
    )
  }

  /**
   * Reads `key` as it was before the transaction's writes: `{ found: true, value, version,
   * expiresAt?, metadata? }` or `{ found: false }`.
   */
  get<T = unknown>(key: string, options: TxGetOptions = {}): Transaction<[...R, TxGetResult<T>]> {
    let json = `{"op":"get","key":${JSON.stringify(key)}`
    if (options.metadata !== undefined) json += `,"metadata":${options.metadata === true}`
    return this.#add('get', `${json}}`)
  }

  /**
   * Stores `value` (any JSON value; bigints as exact integers) under `key`.
   * @throws BadRequestError at once, for a value JSON cannot hold or would change (as `put`);
   *   InvalidMetadataError for metadata that is not an object or passes 1 KiB.
   */
  put(key: string, value: unknown, options: TxPutOptions = {}): Transaction<[...R, TxPutResult]> {
    return this.#put(key, valueText(key, value, this.#ops.length), options)
  }

  /**
   * Stores `json`, which must be exactly one JSON value as text, byte for byte (as `putRaw`).
   * @throws BadRequestError (`invalid_json`) at once for text that is not exactly one JSON value.
   */
  putRaw(key: string, json: string, options: TxPutOptions = {}): Transaction<[...R, TxPutResult]> {
    return this.#put(key, rawText(key, json, this.#ops.length), options)
  }

  #put(key: string, value: string, options: TxPutOptions): Transaction<[...R, TxPutResult]> {
    let json = `{"op":"put","key":${JSON.stringify(key)},"value":${value}`
    if (options.ttl !== undefined) json += `,"ttl":${JSON.stringify(options.ttl)}`
    if (options.expiresAt !== undefined) {
      json += `,"expiresAt":${JSON.stringify(unixSeconds(options.expiresAt))}`
    }
    if (options.metadata !== undefined)
      json += `,"metadata":${metadataText(options.metadata, this.#ops.length)}`
    if (options.ifMatch !== undefined) json += `,"ifMatch":${JSON.stringify(bare(options.ifMatch))}`
    if (options.ifNoneMatch !== undefined) {
      json += `,"ifNoneMatch":${JSON.stringify(options.ifNoneMatch)}`
    }
    return this.#add('put', `${json}}`)
  }

  /** Deletes `key`; a missing key writes nothing and gives `{ deleted: false }`. */
  delete(key: string, options: TxDeleteOptions = {}): Transaction<[...R, TxDeleteResult]> {
    let json = `{"op":"delete","key":${JSON.stringify(key)}`
    if (options.ifMatch !== undefined) json += `,"ifMatch":${JSON.stringify(bare(options.ifMatch))}`
    return this.#add('delete', `${json}}`)
  }

  /**
   * Adds `by` (default 1; a safe integer, a bigint or a string of digits) to the integer
   * stored under `key`, from 0 when it is missing. The result's `value` is a bigint.
   * @throws InvalidPatchError at once when `by` is not an integer.
   */
  increment(key: string, by: number | bigint | string = 1): Transaction<[...R, TxIncrementResult]> {
    const text = integerText(by)
    if (text === undefined) {
      throw new InvalidPatchError({
        status: 400,
        code: 'invalid_patch',
        message: `increment must be an integer (a safe integer number, a bigint or a string of digits); got ${describeValue(by)}.`,
        index: this.#ops.length,
      })
    }
    return this.#add('increment', `{"op":"increment","key":${JSON.stringify(key)},"by":${text}}`)
  }

  #add<N extends TxResult[]>(kind: OpKind, json: string): Transaction<N> {
    this.#ops.push({ kind, json })
    return this as unknown as Transaction<N>
  }

  /**
   * Sends the ops as one transaction. A transaction of only `check` and `get` is retried like
   * a read; one that writes is retried only after a 429 (nothing was applied), since after a
   * lost answer it may or may not have been.
   * @throws InvalidTransactionError before sending when there are no ops or more than 1,000;
   *   the errors listed on {@link Transaction}, with `index`; TransactionTooLargeError when
   *   the body passes the plan's `maxValueBytes` plus 10 MiB; AuthError for a `read` key
   *   that writes; NotFoundError when the namespace does not exist.
   */
  async commit(
    options: CallOptions = {},
  ): Promise<TransactionResult<R extends [] ? TxResult[] : R>> {
    const ops = this.#ops.slice()
    if (ops.length === 0 || ops.length > MAX_TRANSACTION_OPS) {
      throw new InvalidTransactionError({
        status: 400,
        code: 'invalid_transaction',
        message: `A transaction holds 1 to ${MAX_TRANSACTION_OPS} ops; this one has ${ops.length}.`,
        ...(ops.length > 0 ? { index: MAX_TRANSACTION_OPS } : {}),
      })
    }
    const readOnly = ops.every((op) => op.kind === 'check' || op.kind === 'get')
    const reply = await send(this.#cfg, {
      method: 'POST',
      path: `/${this.#namespace}`,
      body: `{"ops":[${ops.map((op) => op.json).join(',')}]}`,
      signal: options.signal,
      retry: readOnly ? 'idempotent' : 'unapplied',
    })
    // Parsed exactly whatever the bigints option, so increments keep every digit; stored
    // values are then given the option's form.
    const res = parseExact(reply)
    if (!Array.isArray(res?.results) || res.results.length !== ops.length) {
      throw invalid(reply, `a transaction answer without ${ops.length} "results"`)
    }
    const results = ops.map((op, i): TxResult => {
      const r = res.results[i]
      if (r === null || typeof r !== 'object') throw invalid(reply, `no result for op ${i}`)
      switch (op.kind) {
        case 'check':
          return {}
        case 'get': {
          if (r.found !== true) return { found: false }
          const out: TxGetResult = {
            found: true,
            value: withBigIntMode(r.value, this.#bigints),
            version: String(r.version ?? ''),
          }
          if (typeof r.expiresAt === 'number') out.expiresAt = r.expiresAt
          if ('metadata' in r) {
            out.metadata = (withBigIntMode(r.metadata, this.#bigints) ?? null) as Metadata | null
          }
          return out
        }
        case 'put':
          return { created: r.created === true, version: String(r.version ?? '') }
        case 'delete':
          return { deleted: r.deleted === true }
        case 'increment': {
          const value = toBigInt(r.value)
          if (value === undefined)
            throw invalid(reply, `an increment result without a value (op ${i})`)
          return { value, version: String(r.version ?? '') }
        }
        default:
          throw invalid(reply, `a result for an op of unknown kind ${op.kind}`)
      }
    })
    return {
      version: String(res.version ?? ''),
      results: results as R extends [] ? TxResult[] : R,
    }
  }
}
