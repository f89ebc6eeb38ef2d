import type { EngineErrorCode } from './types.js'

/** Every error the engine raises on purpose: `code` says what kind, the message says where. */
export class EngineError extends Error {
  readonly code: EngineErrorCode

  constructor(code: EngineErrorCode, message: string) {
    super(message)
    this.name = 'EngineError'
    this.code = code
  }
}

export const fail = (code: EngineErrorCode, message: string): never => {
  throw new EngineError(code, message)
}

/**
 * A file system's error as the engine's, for what fails outside the write path (open,
 * compaction): a full disk is NO_SPACE, any other errno IO_ERROR; the engine's own pass
 * through.
 */
export function asEngineError(err: unknown, what: string): unknown {
  if (err instanceof EngineError) return err
  const code = (err as NodeJS.ErrnoException | null)?.code
  if (typeof code !== 'string' || !code.startsWith('E')) return err
  if (code === 'ENOSPC' || code === 'EDQUOT')
    return new EngineError('NO_SPACE', `disk full (${code}) during ${what}; free space and retry`)
  return new EngineError('IO_ERROR', `${code} during ${what}: ${(err as Error).message}`)
}
