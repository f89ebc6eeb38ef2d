// Structured JSON logs on stdout, one line per event. Anything that could carry a secret is
// redacted by path, and errors are logged by message and code only: never a stack trace in
// a response, and none in the log either unless the level is debug.
import { type Logger as PinoLogger, pino } from 'pino'

export type LogLevel = 'debug' | 'info' | 'warn' | 'error'
export type Logger = PinoLogger

export function createLogger(level: LogLevel): Logger {
  return pino({
    level,
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    messageKey: 'msg',
    formatters: { level: (label) => ({ level: label }) },
    redact: {
      paths: [
        'apiKey',
        'secret',
        'password',
        'token',
        'operatorToken',
        '*.apiKey',
        '*.secret',
        '*.password',
        '*.token',
        'headers.authorization',
        'headers["x-api-key"]',
        'headers.cookie',
      ],
      censor: '[redacted]',
    },
  })
}

/** What of an error goes into a log line: its kind and message, the stack only at debug. */
export function errFields(err: unknown, debug: boolean): Record<string, unknown> {
  if (!(err instanceof Error)) return { err: String(err) }
  const out: Record<string, unknown> = { err: err.message, errName: err.name }
  const code = (err as { code?: unknown }).code
  if (code !== undefined) out.errCode = code
  if (debug) out.stack = err.stack
  return out
}
