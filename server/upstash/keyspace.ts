// The commands on keys as a whole: DEL, EXISTS, TYPE, the EXPIRE family, TTL, PERSIST, KEYS,
// SCAN, DBSIZE and FLUSHDB. Every Cairn value is a Redis string.
import { RedisError, syntaxError } from './errors.js'
import { expiryAt, invalidExpire } from './expiry.js'
import { globMatch, literalPrefix } from './glob.js'
import { OK, type Reply } from './reply.js'
import { type Unit, checkKey } from './unit.js'
import { parseNumber } from './values.js'

export async function del(u: Unit, a: string[]): Promise<Reply> {
  const keys = [...new Set(a.slice(1).map(checkKey))]
  const got = await Promise.all(keys.map((k) => u.get(k)))
  let n = 0
  keys.forEach((k, i) => {
    if (got[i] === undefined) return
    u.delete(k)
    n++
  })
  return n
}

export async function exists(u: Unit, a: string[]): Promise<Reply> {
  const got = await Promise.all(a.slice(1).map((k) => u.get(checkKey(k))))
  return got.filter((c) => c !== undefined).length
}

export async function type(u: Unit, a: string[]): Promise<Reply> {
  return (await u.get(checkKey(a[1]!))) === undefined ? 'none' : 'string'
}

function expireWith(option: 'EX' | 'PX' | 'EXAT' | 'PXAT', name: string) {
  return async (u: Unit, a: string[]): Promise<Reply> => {
    const key = checkKey(a[1]!)
    let at: number
    try {
      at = expiryAt(option, a[2]!, u.now, name, true)
    } catch (err) {
      // A time past what can be held is Redis's own error; a non-integer stays as it is.
      if (err instanceof RedisError && err.message.startsWith('ERR invalid'))
        throw invalidExpire(name)
      throw err
    }
    const flags = new Set<string>()
    for (const f of a.slice(3)) {
      const w = f.toUpperCase()
      if (w !== 'NX' && w !== 'XX' && w !== 'GT' && w !== 'LT')
        throw new RedisError(`ERR Unsupported option ${f}`)
      flags.add(w)
    }
    if (flags.has('NX') && (flags.has('XX') || flags.has('GT') || flags.has('LT')))
      throw new RedisError('ERR NX and XX, GT or LT options at the same time are not compatible')
    if (flags.has('GT') && flags.has('LT'))
      throw new RedisError('ERR GT and LT options at the same time are not compatible')
    const cur = await u.get(key)
    if (cur === undefined) return 0
    const has = cur.expiresAt !== undefined
    if (flags.has('NX') && has) return 0
    if (flags.has('XX') && !has) return 0
    // A key without an expiry counts as living forever: GT never passes it, LT always does.
    if (flags.has('GT') && (!has || at <= cur.expiresAt!)) return 0
    if (flags.has('LT') && has && at >= cur.expiresAt!) return 0
    u.expire(key, cur, at)
    return 1
  }
}
export const expire = expireWith('EX', 'expire')
export const pexpire = expireWith('PX', 'pexpire')
export const expireat = expireWith('EXAT', 'expireat')
export const pexpireat = expireWith('PXAT', 'pexpireat')

function ttlIn(ms: boolean) {
  return async (u: Unit, a: string[]): Promise<Reply> => {
    const cur = await u.get(checkKey(a[1]!))
    if (cur === undefined) return -2
    if (cur.expiresAt === undefined) return -1
    const left = Math.max(0, cur.expiresAt - u.now)
    return ms ? left : Math.floor((left + 500) / 1000)
  }
}
export const ttl = ttlIn(false)
export const pttl = ttlIn(true)

export async function persist(u: Unit, a: string[]): Promise<Reply> {
  const key = checkKey(a[1]!)
  const cur = await u.get(key)
  if (cur?.expiresAt === undefined) return 0
  u.expire(key, cur, undefined)
  return 1
}

/** Keys a KEYS answer or a multi-exec's FLUSHDB may hold: past this, refused. */
const MAX_WHOLE = 100_000
const PAGE = 1000

async function allKeys(u: Unit, prefix: string, command: string): Promise<string[]> {
  const out: string[] = []
  let after: string | undefined
  for (;;) {
    const page = await u.list(prefix, after, PAGE)
    out.push(...page.keys)
    if (out.length > MAX_WHOLE)
      throw new RedisError(
        `ERR ${command} answers at most ${MAX_WHOLE} keys; use SCAN to walk a larger namespace`,
      )
    if (page.next === undefined) return out
    after = page.next
  }
}

export async function keys(u: Unit, a: string[]): Promise<Reply> {
  const pattern = a[1]!
  const all = await allKeys(u, literalPrefix(pattern), 'KEYS')
  return all.filter((k) => globMatch(pattern, k))
}

/** A SCAN cursor: "0" starts and ends a walk; others carry the last key seen. */
const cursorOf = (key: string) => `k${Buffer.from(key).toString('base64url')}`

function afterOf(cursor: string): string | undefined {
  if (cursor === '0') return undefined
  if (cursor.length < 2 || cursor[0] !== 'k') throw new RedisError('ERR invalid cursor')
  const key = Buffer.from(cursor.slice(1), 'base64url').toString('utf8')
  if (cursorOf(key) !== cursor) throw new RedisError('ERR invalid cursor')
  return key
}

export async function scan(u: Unit, a: string[]): Promise<Reply> {
  const after = afterOf(a[1]!)
  let pattern: string | undefined
  let count = 10
  let type: string | undefined
  let withType = false
  for (let i = 2; i < a.length; i++) {
    const w = a[i]!.toUpperCase()
    if (w === 'WITHTYPE') {
      withType = true
      continue
    }
    if (i + 1 >= a.length) throw syntaxError()
    const v = a[++i]!
    if (w === 'MATCH') pattern = v
    else if (w === 'COUNT') {
      count = parseNumber(v)
      if (count < 1) throw syntaxError()
    } else if (w === 'TYPE') type = v.toLowerCase()
    else throw syntaxError()
  }
  const page = await u.list(
    pattern === undefined ? '' : literalPrefix(pattern),
    after,
    Math.min(count, PAGE),
  )
  let found = page.keys
  if (pattern !== undefined) found = found.filter((k) => globMatch(pattern!, k))
  if (type !== undefined && type !== 'string') found = []
  const next = page.next === undefined ? '0' : cursorOf(page.next)
  return [next, withType ? found.flatMap((k) => [k, 'string']) : found]
}

export async function dbsize(u: Unit): Promise<Reply> {
  return u.count()
}

export async function flushdb(u: Unit, a: string[]): Promise<Reply> {
  if (a.length > 2 || (a.length === 2 && !['ASYNC', 'SYNC'].includes(a[1]!.toUpperCase())))
    throw syntaxError()
  if (!u.isolated) {
    await u.data.deletePrefix(u.info, '')
    return OK
  }
  for (const k of await allKeys(u, '', 'FLUSHDB in a multi-exec')) u.delete(k)
  return OK
}
