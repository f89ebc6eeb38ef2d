// API keys, ids and passwords. An API key is `cairn_` and 32 base62 characters (190 bits of
// randomness), so it is recognisable in a config file or a leaked log and cannot be guessed.
// Only its SHA-256 is stored: a fast hash is enough for a secret that long, while passwords,
// which people choose, get scrypt.
import { createHash, randomBytes, randomInt, timingSafeEqual } from 'node:crypto'
import { scryptInWorker } from './password-hasher.js'

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
export const KEY_PREFIX = 'cairn_'
const KEY_BODY = 32
const KEY_SHAPE = /^cairn_[0-9A-Za-z]{32}$/

/** Random base62 text; each character uniform (rejection sampling, no modulo bias). */
export function randomBase62(length: number): string {
  let out = ''
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248 && out.length < length) out += BASE62[byte % 62]
    }
  }
  return out
}

export function newApiKey(): { secret: string; prefix: string; hash: string } {
  const secret = KEY_PREFIX + randomBase62(KEY_BODY)
  return { secret, prefix: secret.slice(0, KEY_PREFIX.length + 6), hash: hashApiKey(secret) }
}

export function looksLikeApiKey(s: string): boolean {
  return s.length === KEY_PREFIX.length + KEY_BODY && KEY_SHAPE.test(s)
}

export function hashApiKey(secret: string): string {
  return createHash('sha256').update(secret).digest('hex')
}

/** Ids people copy into commands: a short kind prefix and 12 lower-case base36 characters. */
export function newId(kind: 'acct' | 'key'): string {
  let s = ''
  for (let i = 0; i < 12; i++) s += '0123456789abcdefghijklmnopqrstuvwxyz'[randomInt(36)]
  return `${kind}_${s}`
}

export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url')
}

// scrypt at N=2^15, r=8: about 32 MiB and a few tens of milliseconds per check, in a
// worker thread of its own (password-hasher.ts) so neither the event loop nor the storage
// engine's share of the libuv thread pool waits for it.
const N = 32768
const R = 8
const P = 1
const KEYLEN = 32
const MAXMEM = 64 * 1024 * 1024

function derive(password: string, salt: Buffer, n: number, r: number, p: number): Promise<Buffer> {
  return scryptInWorker(password.normalize('NFC'), salt, {
    n,
    r,
    p,
    keylen: KEYLEN,
    maxmem: MAXMEM,
  })
}

/** `scrypt$N$r$p$salt$hash`, salt and hash in base64url. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16)
  const key = await derive(password, salt, N, R, P)
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64url')}$${key.toString('base64url')}`
}

export async function checkPassword(password: string, stored: string | null): Promise<boolean> {
  if (!stored) return false
  const [kind, n, r, p, salt, hash] = stored.split('$')
  if (kind !== 'scrypt' || !salt || !hash) return false
  const want = Buffer.from(hash, 'base64url')
  const got = await derive(
    password,
    Buffer.from(salt, 'base64url'),
    Number(n),
    Number(r),
    Number(p),
  )
  return got.length === want.length && timingSafeEqual(got, want)
}

/** A hash to spend time on when the email is unknown, so timing does not tell which emails exist. */
export const DUMMY_PASSWORD_HASH = `scrypt$${N}$${R}$${P}$${Buffer.alloc(16).toString('base64url')}$${Buffer.alloc(KEYLEN).toString('base64url')}`

export function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}
