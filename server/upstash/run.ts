// Running commands: one alone, a pipeline (each command on its own, in order, a failing one
// failing alone) or a multi-exec (all of them as one unit: applied all or nothing). A unit
// whose keys changed under it between its reads and its commit is run again.
import type { Account, NamespaceInfo } from '../services/accounts.js'
import type { Data } from '../services/data.js'
import type { Plan } from '../services/plans.js'
import { storageFault } from '../services/storage-faults.js'
import { ApiError } from '../wire/errors.js'
import { RedisError, noPermission, wrongArity } from './errors.js'
import type { Reply } from './reply.js'
import { COMMANDS, type Command, arityFits } from './table.js'
import { Unit, isConflict } from './unit.js'

/** Runs of one unit before it gives up on keys that keep changing. */
const ATTEMPTS = 100

export interface Target {
  data: Data
  account: Account
  info: NamespaceInfo
  plan: Plan
  canWrite: boolean
  keyCount: () => Promise<number>
}

export interface Outcome {
  result?: Reply
  error?: string
}

/** The command named by args[0], with its arguments checked; RedisError otherwise. */
export function commandOf(args: string[], canWrite: boolean): Command {
  const name = args[0]!
  const cmd = COMMANDS[name.toUpperCase()]
  if (cmd === undefined) throw new RedisError(`ERR unknown command '${name}'`)
  if (!arityFits(cmd, args.length)) throw wrongArity(name.toLowerCase())
  if (cmd.writes && !canWrite) throw noPermission(name.toLowerCase())
  return cmd
}

/** Whether any of the commands may write (they are then applied once nothing can cancel them). */
export function mayWrite(commands: (string[] | RedisError)[]): boolean {
  return commands.some((a) => Array.isArray(a) && COMMANDS[a[0]!.toUpperCase()]?.writes)
}

/** Runs `body` on a fresh unit until its commit holds; resolves with its answer and version. */
async function inUnit<T>(
  t: Target,
  isolated: boolean,
  body: (u: Unit) => Promise<T>,
): Promise<{ value: T; version: number | undefined }> {
  for (let attempt = 1; ; attempt++) {
    const u = new Unit(t.data, t.account, t.info, t.plan, isolated, t.keyCount)
    const value = await body(u)
    try {
      await u.commit()
      return { value, version: u.version }
    } catch (err) {
      if (!isConflict(err)) throw err
      if (attempt >= ATTEMPTS)
        throw new RedisError('ERR the keys kept changing while the command ran; send it again')
      await new Promise((r) => setTimeout(r, Math.min(attempt, 10)))
    }
  }
}

/** One command; rejects with its error. */
export async function runOne(
  t: Target,
  args: string[],
): Promise<{ value: Reply; version?: number }> {
  const cmd = commandOf(args, t.canWrite)
  return inUnit(t, false, async (u) => cmd.run(u, args))
}

/** An error as a pipeline entry's text; anything not the caller's to know is rethrown. */
export function errorMessage(err: unknown): string {
  if (err instanceof RedisError) return err.message
  if (err instanceof ApiError) return `ERR ${err.message}`
  const fault = storageFault(err)
  if (fault) return `ERR ${fault.message}`
  throw err
}

/** A pipeline: every command in order, each its own unit. */
export async function runPipeline(
  t: Target,
  commands: (string[] | RedisError)[],
  onInternal: (err: unknown) => void,
): Promise<{ value: Outcome[]; version?: number }> {
  const out: Outcome[] = []
  let version: number | undefined
  for (const args of commands) {
    try {
      if (args instanceof RedisError) throw args
      const done = await runOne(t, args)
      if (done.version !== undefined) version = done.version
      out.push({ result: done.value })
    } catch (err) {
      let message: string
      try {
        message = errorMessage(err)
      } catch {
        onInternal(err)
        message = 'ERR internal error'
      }
      out.push({ error: message })
    }
  }
  return { value: out, version }
}

/**
 * A multi-exec: every command on one unit, applied together or not at all. The first failing
 * command fails the whole (nothing applied), its error naming it.
 */
export async function runMulti(
  t: Target,
  commands: (string[] | RedisError)[],
): Promise<{ value: Reply[]; version?: number }> {
  const checked = commands.map((args, i) => {
    try {
      if (args instanceof RedisError) throw args
      return { args, cmd: commandOf(args, t.canWrite) }
    } catch (err) {
      throw named(err, i, args)
    }
  })
  return inUnit(t, true, async (u) => {
    const out: Reply[] = []
    for (let i = 0; i < checked.length; i++) {
      const { args, cmd } = checked[i]!
      try {
        out.push(await cmd.run(u, args))
      } catch (err) {
        throw named(err, i, args)
      }
    }
    return out
  })
}

/** A multi-exec's failing command, named in its error. */
function named(err: unknown, i: number, args: string[] | RedisError): unknown {
  if (!(err instanceof RedisError)) return err
  const name = Array.isArray(args) ? ` (${args[0]!.toLowerCase()})` : ''
  const space = err.message.indexOf(' ')
  const kind = space < 0 ? 'ERR' : err.message.slice(0, space)
  return new RedisError(
    `${kind} command ${i + 1}${name} failed, nothing was applied: ${err.message.slice(space + 1)}`,
    err.status,
  )
}
