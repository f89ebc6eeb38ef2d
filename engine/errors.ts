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
