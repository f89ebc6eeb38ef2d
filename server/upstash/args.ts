// Commands as they arrive: a JSON array (`["SET", "k", "v", "EX", 60]`), an array of them
// (a pipeline or multi-exec), or the path form (`/set/k/v`, each segment percent-decoded, a
// POST's body the last argument). An argument may be a JSON string, number or boolean (a
// number or boolean means its text, exactly as sent); an object or array is taken as its
// JSON text. The body is checked as strict JSON first.
import { ApiError } from '../wire/errors.js'
import {
  type Span,
  arrayElements,
  bodyMembers,
  spanLiteral,
  spanString,
  spanText,
} from '../wire/json-body.js'
import { RedisError } from './errors.js'

/** Commands of one pipeline or multi-exec at most, as Upstash's own limit is unbounded. */
export const MAX_COMMANDS = 1000

function topSpan(body: Buffer): Span {
  let members: ReturnType<typeof bodyMembers>
  try {
    members = bodyMembers(body)
  } catch (err) {
    if (err instanceof ApiError)
      throw new RedisError(`ERR the body is not valid JSON: ${err.message}`)
    throw err
  }
  let start = 0
  while (start < body.length && body[start]! <= 0x20) start++
  if (members !== undefined || body[start] !== 0x5b)
    throw new RedisError('ERR the body must be a JSON array')
  return { start, end: body.length, spaces: 0 }
}

function argOf(body: Buffer, at: Span): string {
  const s = spanString(body, at)
  if (s !== undefined) return s
  const literal = spanLiteral(body, at)
  if (literal === null) throw new RedisError('ERR an argument is null: send a string')
  if (literal !== undefined) return String(literal)
  return spanText(body, at).toString('utf8')
}

function commandOf(body: Buffer, at: Span): string[] {
  const elements = arrayElements(body, at)
  if (elements === undefined) throw new RedisError('ERR a command is a JSON array of its arguments')
  if (elements.length === 0) throw new RedisError('ERR a command may not be empty')
  return elements.map((e) => argOf(body, e))
}

/**
 * The common case read in one pass: a command of ASCII strings without escapes or whitespace,
 * as the client sends most; undefined for anything else (the strict parser then reads it).
 * `at` is where its `[` is; the command ends at `out.end`, after its `]`.
 */
function quickCommand(body: Buffer, at: number, out: { end: number }): string[] | undefined {
  if (body[at] !== 0x5b || body[at + 1] !== 0x22) return undefined
  const args: string[] = []
  let i = at + 1
  for (;;) {
    if (body[i] !== 0x22) return undefined
    const start = ++i
    for (;;) {
      const c = body[i]
      if (c === undefined || c < 0x20 || c >= 0x80 || c === 0x5c) return undefined
      if (c === 0x22) break
      i++
    }
    args.push(body.toString('latin1', start, i))
    const next = body[++i]
    if (next === 0x5d) {
      out.end = i + 1
      return args
    }
    if (next !== 0x2c) return undefined
    i++
  }
}

const quickEnd = { end: 0 }

/** POST /upstash/{ns}: one command. */
export function parseCommand(body: Buffer): string[] {
  const quick = quickCommand(body, 0, quickEnd)
  if (quick !== undefined && quickEnd.end === body.length) return quick
  return commandOf(body, topSpan(body))
}

/**
 * POST .../pipeline and .../multi-exec: the commands, each one's arguments or the error that
 * makes it fail alone (a pipeline's other commands still run).
 */
export function parseCommands(body: Buffer): (string[] | RedisError)[] {
  // A pipeline of one (auto-pipelining's usual request).
  if (body[0] === 0x5b) {
    const quick = quickCommand(body, 1, quickEnd)
    if (quick !== undefined && quickEnd.end === body.length - 1 && body[quickEnd.end] === 0x5d)
      return [quick]
  }
  const top = topSpan(body)
  const list = arrayElements(body, top)!
  if (list.length === 0) throw new RedisError('ERR the pipeline holds no commands')
  if (list.length > MAX_COMMANDS)
    throw new RedisError(`ERR at most ${MAX_COMMANDS} commands are taken at once`)
  return list.map((at) => {
    try {
      return commandOf(body, at)
    } catch (err) {
      if (err instanceof RedisError) return err
      throw err
    }
  })
}

/** The path form: the segments after the namespace, and a POST's body as one more argument. */
export function pathCommand(rest: string, body: Buffer | undefined): string[] {
  const args = rest.split('/').map((seg) => {
    try {
      return decodeURIComponent(seg)
    } catch {
      throw new RedisError('ERR a path segment is not valid percent-encoded UTF-8')
    }
  })
  if (body !== undefined && body.length > 0) args.push(body.toString('utf8'))
  return args
}
