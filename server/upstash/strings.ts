// The string commands: GET, SET and its kin, MGET/MSET, INCR and its kin, APPEND, STRLEN.
// Commands that change a value in place (INCR, APPEND, ...) keep its expiry and its metadata,
// as Redis keeps the expiry; the SET family replaces the entry, as a PUT does.
import { RedisError, syntaxError, wrongArity } from './errors.js'
import { type ExpiryOption, expiryOption, invalidExpire } from './expiry.js'
import { Bulk, OK, type Reply } from './reply.js'
import { type Unit, checkKey } from './unit.js'
import {
  INT64_MAX,
  INT64_MIN,
  byteLength,
  floatText,
  parseFloatArg,
  parseInteger,
  parseNumber,
  storedInteger,
  storedOf,
  textOf,
} from './values.js'

const bulk = (v: Buffer | undefined): Reply => (v === undefined ? null : new Bulk(v))

export async function get(u: Unit, a: string[]): Promise<Reply> {
  return bulk((await u.get(checkKey(a[1]!)))?.value)
}

const SET_EXPIRY = ['EX', 'PX', 'EXAT', 'PXAT', 'KEEPTTL']

export async function set(u: Unit, a: string[]): Promise<Reply> {
  const key = checkKey(a[1]!)
  let cond: 'NX' | 'XX' | undefined
  let withGet = false
  const exp: ExpiryOption = {}
  for (let i = 3; i < a.length; ) {
    const took = expiryOption(a, i, exp, u.now, 'set', SET_EXPIRY)
    if (took > 0) {
      i += took
      continue
    }
    const word = a[i]!.toUpperCase()
    if ((word === 'NX' || word === 'XX') && cond === undefined) cond = word
    else if (word === 'GET' && !withGet) withGet = true
    else throw syntaxError()
    i++
  }
  const value = storedOf(a[2]!)
  if (cond === undefined && !withGet && !exp.keep) {
    u.put(key, value, exp.at)
    return OK
  }
  const cur = await u.get(key)
  if ((cond === 'NX' && cur !== undefined) || (cond === 'XX' && cur === undefined))
    return withGet ? bulk(cur?.value) : null
  u.put(key, value, exp.keep ? cur?.expiresAt : exp.at)
  return withGet ? bulk(cur?.value) : OK
}

export async function setnx(u: Unit, a: string[]): Promise<Reply> {
  const key = checkKey(a[1]!)
  if ((await u.get(key)) !== undefined) return 0
  u.put(key, storedOf(a[2]!), undefined)
  return 1
}

function setWithTime(unitMs: number, name: string) {
  return async (u: Unit, a: string[]): Promise<Reply> => {
    const key = checkKey(a[1]!)
    const n = parseNumber(a[2]!)
    if (n <= 0 || n * unitMs > 8.64e15) throw invalidExpire(name)
    u.put(key, storedOf(a[3]!), u.now + n * unitMs)
    return OK
  }
}
export const setex = setWithTime(1000, 'setex')
export const psetex = setWithTime(1, 'psetex')

export async function getdel(u: Unit, a: string[]): Promise<Reply> {
  const key = checkKey(a[1]!)
  const cur = await u.get(key)
  if (cur !== undefined) u.delete(key)
  return bulk(cur?.value)
}

export async function getex(u: Unit, a: string[]): Promise<Reply> {
  const key = checkKey(a[1]!)
  const exp: ExpiryOption = {}
  for (let i = 2; i < a.length; ) {
    const took = expiryOption(a, i, exp, u.now, 'getex', ['EX', 'PX', 'EXAT', 'PXAT', 'PERSIST'])
    if (took === 0) throw syntaxError()
    i += took
  }
  const cur = await u.get(key)
  if (cur === undefined) return null
  if (exp.persist) {
    if (cur.expiresAt !== undefined) u.expire(key, cur, undefined)
  } else if (exp.at !== undefined) u.expire(key, cur, exp.at)
  return new Bulk(cur.value)
}

export async function getset(u: Unit, a: string[]): Promise<Reply> {
  const key = checkKey(a[1]!)
  const cur = await u.get(key)
  u.put(key, storedOf(a[2]!), undefined)
  return bulk(cur?.value)
}

export async function mget(u: Unit, a: string[]): Promise<Reply> {
  const keys = a.slice(1).map(checkKey)
  const got = await Promise.all(keys.map((k) => u.get(k)))
  return got.map((c) => bulk(c?.value))
}

function pairs(a: string[]): [string, Buffer][] {
  if (a.length % 2 === 0) throw wrongArity(a[0]!.toLowerCase())
  const out: [string, Buffer][] = []
  for (let i = 1; i < a.length; i += 2) out.push([checkKey(a[i]!), storedOf(a[i + 1]!)])
  return out
}

export async function mset(u: Unit, a: string[]): Promise<Reply> {
  for (const [k, v] of pairs(a)) u.put(k, v, undefined)
  return OK
}

export async function msetnx(u: Unit, a: string[]): Promise<Reply> {
  const kv = pairs(a)
  const got = await Promise.all(kv.map(([k]) => u.get(k)))
  if (got.some((c) => c !== undefined)) return 0
  for (const [k, v] of kv) u.put(k, v, undefined)
  return 1
}

async function incrBy(u: Unit, key: string, by: bigint): Promise<Reply> {
  checkKey(key)
  const cur = await u.get(key)
  const n = cur === undefined ? 0n : storedInteger(cur.value)
  const next = n + by
  if (next < INT64_MIN || next > INT64_MAX)
    throw new RedisError('ERR increment or decrement would overflow')
  u.put(key, Buffer.from(next.toString(), 'latin1'), cur?.expiresAt, cur?.metadata)
  return next
}

export const incr = (u: Unit, a: string[]) => incrBy(u, a[1]!, 1n)
export const decr = (u: Unit, a: string[]) => incrBy(u, a[1]!, -1n)
export const incrby = (u: Unit, a: string[]) => incrBy(u, a[1]!, parseInteger(a[2]!))
export function decrby(u: Unit, a: string[]): Promise<Reply> {
  const by = parseInteger(a[2]!)
  if (by === INT64_MIN) throw new RedisError('ERR decrement would overflow')
  return incrBy(u, a[1]!, -by)
}

/** INCRBYFLOAT stores its result as a JSON number (its text has no exponent, as Redis's). */
export async function incrbyfloat(u: Unit, a: string[]): Promise<Reply> {
  const key = checkKey(a[1]!)
  const by = parseFloatArg(a[2]!)
  const cur = await u.get(key)
  const n = cur === undefined ? 0 : parseFloatArg(textOf(cur.value))
  const sum = n + by
  if (!Number.isFinite(sum)) throw new RedisError('ERR increment would produce NaN or Infinity')
  const text = floatText(sum)
  u.put(key, Buffer.from(text, 'latin1'), cur?.expiresAt, cur?.metadata)
  return text
}

export async function append(u: Unit, a: string[]): Promise<Reply> {
  const key = checkKey(a[1]!)
  const cur = await u.get(key)
  const value = storedOf((cur === undefined ? '' : textOf(cur.value)) + a[2]!)
  u.put(key, value, cur?.expiresAt, cur?.metadata)
  return byteLength(value)
}

export async function strlen(u: Unit, a: string[]): Promise<Reply> {
  const cur = await u.get(checkKey(a[1]!))
  return cur === undefined ? 0 : byteLength(cur.value)
}
