// Reads of the past and restores (the contract's "History and restore"): a point as the
// server takes it, and the shapes of `?history=1` and `POST ?restore=1` answers.
import { BadRequestError } from './errors.js'
import type { Metadata } from './types.js'

/**
 * A point in a namespace's history: a version (digits, as a string, number or bigint), a
 * Date, or an RFC 3339 time (`2026-12-01T10:00:00Z`). A time means the state after every
 * write committed at or before it.
 */
export type Point = string | number | bigint | Date

/** A key as it was at a point (`GET /{ns}/{key}?at=`). */
export interface EntryAt<T = unknown> {
  value: T
  /** The version the key had then. */
  version: string
  /** Unix seconds, when it had an expiry then. */
  expiresAt?: number
  /** With `metadata: true`: its metadata then, or null when it had none. */
  metadata?: Metadata | null
}

/** One version of a key within the history, newest first. */
export interface KeyVersion<T = unknown> {
  version: string
  /** When it was committed (ISO 8601). */
  at: string
  /** The version is a delete: no value. */
  deleted?: true
  value?: T
  expiresAt?: number
  metadata?: Metadata
}

/** A page of a key's versions (`GET /{ns}/{key}?history=1`), newest first. */
export interface HistoryPage<T = unknown> {
  versions: KeyVersion<T>[]
  /** Present when older versions remain: pass it back as `cursor`. */
  cursor?: string
}

export interface HistoryOptions {
  /** Versions per page, 1 to 1000 (the server's default is 100). */
  limit?: number
  cursor?: string
  signal?: AbortSignal
}

export interface RestoreOptions {
  /** The point to put the keys back to. */
  at: Point
  prefix?: string
  /** First key of the range (inclusive). */
  start?: string
  /** End of the range (exclusive). */
  end?: string
  signal?: AbortSignal
}

export interface RestoreResult {
  /** Keys written (changed back, deleted, or brought back). */
  restored: number
  /** The namespace's version after the restore. */
  version: string
}

const badPoint = (why: string): never => {
  throw new BadRequestError({
    status: 400,
    code: 'invalid_point',
    message: `${why} A point is a version, a Date, or an RFC 3339 time such as 2026-12-01T10:00:00Z.`,
  })
}

/** The point as the server reads it in `at=`; throws BadRequestError(`invalid_point`) for none. */
export function pointText(point: Point): string {
  if (point instanceof Date) {
    if (Number.isNaN(point.getTime())) return badPoint('The Date is invalid.')
    return point.toISOString()
  }
  if (typeof point === 'bigint') {
    if (point < 0n) return badPoint('A version is 0 or more.')
    return point.toString()
  }
  if (typeof point === 'number') {
    if (!Number.isSafeInteger(point) || point < 0) return badPoint(`${point} is not a version.`)
    return String(point)
  }
  // Text goes as given: the server judges versions and times (its error names what is wrong).
  if (typeof point !== 'string' || point === '') return badPoint('The point is empty.')
  return point
}
