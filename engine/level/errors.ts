// Engine errors as Level errors: the codes abstract-level documents, the engine's error as
// the cause.
import { EngineError } from '../errors.js'
import type { EngineErrorCode } from '../types.js'

const CODES: Partial<Record<EngineErrorCode, string>> = {
  CORRUPT: 'LEVEL_CORRUPTION',
  IO_ERROR: 'LEVEL_IO_ERROR',
  NO_SPACE: 'LEVEL_IO_ERROR',
  LOCKED: 'LEVEL_LOCKED',
  CLOSED: 'LEVEL_DATABASE_NOT_OPEN',
}

export class LevelError extends Error {
  constructor(
    message: string,
    readonly code: string,
    options?: { cause?: unknown },
  ) {
    super(message, options)
    this.name = 'LevelError'
  }
}

export function levelError(err: unknown): unknown {
  if (!(err instanceof EngineError)) return err
  const code = CODES[err.code as EngineErrorCode]
  return code === undefined ? err : new LevelError(err.message, code, { cause: err })
}
