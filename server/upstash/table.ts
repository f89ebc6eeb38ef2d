// The command table: every command this endpoint takes, its arity as Redis gives it (n: exactly
// n arguments with the name; -n: at least n) and whether it writes. Names are case-insensitive.
import { wrongArity } from './errors.js'
import * as k from './keyspace.js'
import type { Reply } from './reply.js'
import * as s from './strings.js'
import type { Unit } from './unit.js'

export interface Command {
  arity: number
  writes: boolean
  run(u: Unit, args: string[]): Promise<Reply> | Reply
}

const c = (arity: number, writes: boolean, run: Command['run']): Command => ({
  arity,
  writes,
  run,
})

export const COMMANDS: Record<string, Command> = {
  PING: c(-1, false, (_u, a) => {
    if (a.length > 2) throw wrongArity('ping')
    return a.length === 2 ? a[1]! : 'PONG'
  }),
  ECHO: c(2, false, (_u, a) => a[1]!),
  GET: c(2, false, s.get),
  SET: c(-3, true, s.set),
  SETNX: c(3, true, s.setnx),
  SETEX: c(4, true, s.setex),
  PSETEX: c(4, true, s.psetex),
  GETDEL: c(2, true, s.getdel),
  GETEX: c(-2, true, s.getex),
  GETSET: c(3, true, s.getset),
  MGET: c(-2, false, s.mget),
  MSET: c(-3, true, s.mset),
  MSETNX: c(-3, true, s.msetnx),
  DEL: c(-2, true, k.del),
  UNLINK: c(-2, true, k.del),
  EXISTS: c(-2, false, k.exists),
  TYPE: c(2, false, k.type),
  EXPIRE: c(-3, true, k.expire),
  PEXPIRE: c(-3, true, k.pexpire),
  EXPIREAT: c(-3, true, k.expireat),
  PEXPIREAT: c(-3, true, k.pexpireat),
  TTL: c(2, false, k.ttl),
  PTTL: c(2, false, k.pttl),
  PERSIST: c(2, true, k.persist),
  INCR: c(2, true, s.incr),
  INCRBY: c(3, true, s.incrby),
  DECR: c(2, true, s.decr),
  DECRBY: c(3, true, s.decrby),
  INCRBYFLOAT: c(3, true, s.incrbyfloat),
  APPEND: c(3, true, s.append),
  STRLEN: c(2, false, s.strlen),
  KEYS: c(2, false, k.keys),
  SCAN: c(-2, false, k.scan),
  DBSIZE: c(1, false, k.dbsize),
  FLUSHDB: c(-1, true, k.flushdb),
}

/** Whether a command's argument count fits its arity. */
export function arityFits(cmd: Command, n: number): boolean {
  return cmd.arity >= 0 ? n === cmd.arity : n >= -cmd.arity
}
