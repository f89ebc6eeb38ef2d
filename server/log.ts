// Structured JSON logs on stdout, one line per event. Anything that could carry a secret is
// redacted by path, and errors are logged by message and code only: never a stack trace in
// a response, and none in the log either unless the level is debug.
import { LRUCache } from 'lru-cache'
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

/**
 * A log line that may come many times a second (a refusal for every request while the disk
 * is full) is written at most once per `everyMs` for each kind, with how many were left out
 * since: the log shows the problem without filling the disk it may share. A kind is an
 * error's code and message, numbers aside, so each different failure still shows; at most
 * 100 are kept.
 */
export class Repeats {
  private seen = new LRUCache<string, { at: number; skipped: number }>({ max: 100 })

  constructor(private everyMs: number) {}

  warn(log: Logger, what: string, fields: Record<string, unknown>, msg: string): void {
    // Numbers in a message (a slot, a port, a byte count) do not make another kind.
    const kind = what.replace(/\d+/g, '#')
    const now = Date.now()
    const s = this.seen.get(kind)
    if (s !== undefined && now - s.at < this.everyMs) {
      s.skipped++
      return
    }
    const skipped = s?.skipped ?? 0
    this.seen.set(kind, { at: now, skipped: 0 })
    log.warn(skipped > 0 ? { ...fields, alikeLeftOut: skipped } : fields, msg)
  }
}
