// The expiry options of SET and GETEX (EX, PX, EXAT, PXAT, KEEPTTL, PERSIST), and the
// numbers of EXPIRE and its kin, as milliseconds since the epoch.
import { RedisError, syntaxError } from './errors.js'
import { parseNumber } from './values.js'

/** Later than any time a JavaScript Date can hold: Redis's "invalid expire time". */
const LAST_MS = 8.64e15

export const invalidExpire = (command: string) =>
  new RedisError(`ERR invalid expire time in '${command}' command`)

/** The absolute time of `amount` in an option's unit; EX and PX count from `now`. */
export function expiryAt(
  option: 'EX' | 'PX' | 'EXAT' | 'PXAT',
  amount: string,
  now: number,
  command: string,
  mayBePast = false,
): number {
  const n = parseNumber(amount)
  if (!mayBePast && n <= 0) throw invalidExpire(command)
  const ms = option === 'EX' || option === 'EXAT' ? n * 1000 : n
  const at = option === 'EX' || option === 'PX' ? now + ms : ms
  if (Math.abs(at) > LAST_MS) throw invalidExpire(command)
  return at
}

export interface ExpiryOption {
  /** The new expiry; undefined with `persist` or `keep`, or when none was given. */
  at?: number
  keep?: boolean
  persist?: boolean
}

/**
 * Reads one expiry option at args[i] into `out`; returns how many arguments it took, 0 when
 * args[i] is none of them. A second expiry option is a syntax error.
 */
export function expiryOption(
  args: string[],
  i: number,
  out: ExpiryOption,
  now: number,
  command: string,
  allowed: string[],
): number {
  const word = args[i]!.toUpperCase()
  if (!allowed.includes(word)) return 0
  if (out.at !== undefined || out.keep || out.persist) throw syntaxError()
  if (word === 'KEEPTTL') {
    out.keep = true
    return 1
  }
  if (word === 'PERSIST') {
    out.persist = true
    return 1
  }
  if (i + 1 >= args.length) throw syntaxError()
  out.at = expiryAt(word as 'EX', args[i + 1]!, now, command)
  return 2
}
