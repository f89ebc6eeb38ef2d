// Dashboard sessions, kept in the store's session records, which no API can name.
// The cookie holds `<account id>.<random secret>`; storage holds the record under
// `<account id>/<SHA-256 of the secret>`, so a copy of the data directory cannot be
// replayed as a login, and one account's sessions list by prefix (to end them all after a
// password change). Each session carries its own CSRF token.
import type { Clock } from './clock.js'
import { createHash } from 'node:crypto'
import { LRUCache } from 'lru-cache'
import { REFRESH_MS } from './accounts.js'
import { randomToken, sameSecret } from './secrets.js'
import type { Records, Store } from '../store/types.js'

export const SESSION_COOKIE = 'cairn_session'
export const PRE_SESSION_COOKIE = 'cairn_pre'
const TTL_MS = 7 * 24 * 3600 * 1000
const CACHE_MAX = 10_000
/**
 * Sessions an account keeps at once: a sign-in past this ends the oldest. Sign-ins that
 * succeed are not throttled, and each session is a record kept for a week, so without a
 * bound a script signing in all day would pile up millions of them.
 */
export const MAX_SESSIONS = 50
const COOKIE_SHAPE = /^(acct_[a-z0-9]{1,40})\.([A-Za-z0-9_-]{43})$/

export interface Session {
  accountId: string
  csrf: string
  createdAt: number
  expiresAt: number
}

const recordKey = (accountId: string, secret: string) =>
  `${accountId}/${createHash('sha256').update(secret).digest('hex')}`

export function sameToken(a: string | undefined, b: string | undefined): boolean {
  return !!a && !!b && sameSecret(a, b)
}

export class SessionStore {
  /**
   * Sessions recently used, so a page load costs no storage read (bounded, LRU). On a store
   * other front ends share, a session ended elsewhere is trusted here for REFRESH_MS at most.
   */
  private cache: LRUCache<string, Session>
  private records: Records

  constructor(
    store: Store,
    private readonly clock: Clock,
  ) {
    this.records = store.records
    this.cache = new LRUCache({
      max: CACHE_MAX,
      ...(store.supports.soleWriter ? {} : { ttl: REFRESH_MS }),
    })
  }

  /** A new session; `cookie` is the value for the session cookie. */
  async create(accountId: string): Promise<{ cookie: string; session: Session }> {
    const secret = randomToken()
    const now = this.clock.now()
    const session: Session = {
      accountId,
      csrf: randomToken(),
      createdAt: now,
      expiresAt: now + TTL_MS,
    }
    const key = recordKey(accountId, secret)
    await this.records.put('session', key, session, { expiresAt: session.expiresAt })
    this.remember(key, session)
    await this.trim(accountId, key)
    return { cookie: `${accountId}.${secret}`, session }
  }

  /** Ends the account's oldest sessions past MAX_SESSIONS (never `keep`, the newest). */
  private async trim(accountId: string, keep: string): Promise<void> {
    const page = await this.records.list<Session>('session', `${accountId}/`, undefined, 1000)
    const over = page.items.length - MAX_SESSIONS
    if (over <= 0) return
    const oldest = page.items
      .filter(([k]) => k !== keep)
      .sort((a, b) => a[1].createdAt - b[1].createdAt)
      .slice(0, over)
      .map(([k]) => k)
    for (const k of oldest) this.cache.delete(k)
    await this.records.batch(
      oldest.map((id) => ({ kind: 'session' as const, id, delete: true as const })),
    )
  }

  async get(cookie: string | undefined): Promise<Session | undefined> {
    const key = keyOf(cookie)
    if (key === undefined) return undefined
    let session = this.cache.get(key)
    if (!session) {
      session = await this.records.get<Session>('session', key)
      if (!session) return undefined
      this.remember(key, session)
    }
    if (session.expiresAt <= this.clock.now()) {
      this.cache.delete(key)
      return undefined
    }
    return session
  }

  async destroy(cookie: string | undefined): Promise<void> {
    const key = keyOf(cookie)
    if (key === undefined) return
    this.cache.delete(key)
    await this.records.delete('session', key)
  }

  /** Ends every session of an account but the one behind `keepCookie`. */
  async destroyAccount(accountId: string, keepCookie?: string): Promise<void> {
    const keep = keyOf(keepCookie)
    for (;;) {
      const page = await this.records.list('session', `${accountId}/`, undefined, 1000)
      const doomed = page.items.map(([k]) => k).filter((k) => k !== keep)
      if (doomed.length === 0) return
      for (const k of doomed) this.cache.delete(k)
      await this.records.batch(
        doomed.map((id) => ({ kind: 'session' as const, id, delete: true as const })),
      )
    }
  }

  private remember(key: string, s: Session): void {
    this.cache.set(key, s)
  }

  get cached(): number {
    return this.cache.size
  }
}

function keyOf(cookie: string | undefined): string | undefined {
  const m = cookie ? COOKIE_SHAPE.exec(cookie) : null
  return m ? recordKey(m[1]!, m[2]!) : undefined
}

const attrs = (secure: boolean) => `; Path=/; HttpOnly${secure ? '; Secure' : ''}`

// Lax, not Strict: a link to the dashboard from mail or chat should arrive signed in. Every
// state-changing call also needs the CSRF token, which SameSite does not replace.
export function sessionCookie(value: string, secure: boolean): string {
  return `${SESSION_COOKIE}=${value}; SameSite=Lax; Max-Age=${TTL_MS / 1000}${attrs(secure)}`
}

export function clearSessionCookie(secure: boolean): string {
  return `${SESSION_COOKIE}=; SameSite=Lax; Max-Age=0${attrs(secure)}`
}

/** Before a session exists, the log-in and sign-up forms double-submit this token. */
export function preSessionCookie(token: string, secure: boolean): string {
  return `${PRE_SESSION_COOKIE}=${token}; SameSite=Strict; Max-Age=3600${attrs(secure)}`
}

/** Once signed in, the session's own CSRF token takes over: the form's token goes. */
export function clearPreSessionCookie(secure: boolean): string {
  return `${PRE_SESSION_COOKIE}=; SameSite=Strict; Max-Age=0${attrs(secure)}`
}
