// Sign-up, log-in, log-out, password change and account deletion. Email and password rules
// are the accounts module's own, so the dashboard and the command line agree on them.
import { cancelForDeletion } from '../services/billing/cancel.js'
import { storageFault } from '../services/storage-faults.js'
import { checkNewPassword, normalizeEmail } from '../services/accounts.js'
import type { Context } from '../context.js'
import { ApiError } from '../wire/errors.js'
import type { Caller } from './guard.js'
import { type Reply, type Req, jsonReply, readJson } from '../http/pipeline.js'
import {
  type SessionStore,
  clearPreSessionCookie,
  clearSessionCookie,
  sessionCookie,
} from '../services/sessions.js'
import { Throttle } from './throttle.js'
import { AddressLimiter } from '../services/limits.js'
import { LRUCache } from 'lru-cache'

const WINDOW_MS = 15 * 60_000
const KNOWN_MS = 30 * 24 * 3600_000

/**
 * Log-in throttling, with the attempt counted before the password is hashed (a reservation),
 * so a thousand guesses sent at once are refused as surely as a thousand sent one by one:
 * - per address and email: 5 failures per 15 minutes (one guesser, one account);
 * - per address: 20 failures per 15 minutes across accounts (one guesser, many accounts);
 * - per email, a slow-down rather than a lockout: 10 attempts at once, then one every
 *   6 seconds, for addresses that have not logged in to that account before, so guesses
 *   spread over many addresses are slow while the owner is never locked out: from an
 *   address they used before they skip it, from a new one they wait seconds, not minutes;
 * - a signed-in user re-entering their password (to change it, or to delete the account) is
 *   counted per session, so nobody else's guesses can block it.
 * Every map is bounded (lru-cache), see docs/configuration.md.
 */
export class AuthApi {
  private perAddressEmail = new Throttle(5, WINDOW_MS)
  private perAddress = new Throttle(20, WINDOW_MS)
  private perEmail = new AddressLimiter(10, 1 / 6)
  private perSession = new Throttle(5, WINDOW_MS)
  private known = new LRUCache<string, true>({ max: 100_000, ttl: KNOWN_MS })
  private signups = new Throttle(20, 60 * 60_000)

  constructor(
    private ctx: Context,
    private sessions: SessionStore,
  ) {}

  async signup(req: Req): Promise<Reply> {
    const body = readJson(req)
    const now = this.ctx.clock.now()
    const wait = this.signups.retryAfter(req.ip, now)
    if (wait) throw tooMany(wait)
    // Checked here as well: an account made without a password could never log in.
    const email = normalizeEmail(body.email)
    const password = checkNewPassword(body.password)
    // Counted before the account is made, not after: sign-ups sent together would otherwise
    // all pass the check above while the first ones are still hashing. An email already
    // taken counts too, so asking which emails have accounts is as slow as signing up.
    this.signups.fail(req.ip, now)
    const made = await this.ctx.accounts.create({ email, password }).catch((err) => {
      // The storage refused it: a sign-up tried again once it works should not find the
      // address's allowance spent by the outage.
      if (storageFault(err) !== undefined) this.signups.undo(req.ip)
      throw err
    })
    const answer = {
      account: made.account,
      apiKey: { ...made.apiKey.key, secret: made.apiKey.secret },
      csrf: '',
    }
    // The account exists from here on and its key is shown only in this answer: a session
    // the storage will not take now must not turn that into an error. The page then shows
    // the key, and the next page asks the user to sign in.
    const signedIn = await this.sessions.create(made.account.id).catch(() => undefined)
    if (signedIn === undefined)
      return jsonReply(201, answer, { setCookies: [clearPreSessionCookie(req.secure)] })
    answer.csrf = signedIn.session.csrf
    return jsonReply(201, answer, {
      setCookies: [sessionCookie(signedIn.cookie, req.secure), clearPreSessionCookie(req.secure)],
    })
  }

  async login(req: Req): Promise<Reply> {
    const body = readJson(req)
    const email = normalizeEmail(body.email)
    const account = await this.login1(req, email, body.password)
    const { cookie, session } = await this.sessions.create(account.id)
    return jsonReply(
      200,
      { account: account.view(), csrf: session.csrf },
      { setCookies: [sessionCookie(cookie, req.secure), clearPreSessionCookie(req.secure)] },
    )
  }

  async logout(req: Req, caller: Caller): Promise<Reply> {
    await this.sessions.destroy(caller.cookie)
    return jsonReply(200, { ok: true }, { setCookies: [clearSessionCookie(req.secure)] })
  }

  async changePassword(req: Req, caller: Caller): Promise<Reply> {
    const body = readJson(req)
    const next = checkNewPassword(body.password)
    const account = await this.recheck(caller, body.current)
    // Whoever else holds a session for this account is signed out, before the password
    // changes: a change the storage refuses part way then leaves no session of the old
    // password standing beside the new one.
    await this.sessions.destroyAccount(account.id, caller.cookie)
    await this.ctx.accounts.setPassword(account, next)
    // And after: a sign-in with the old password while the new one was hashed and saved.
    await this.sessions.destroyAccount(account.id, caller.cookie).catch(() => {})
    return jsonReply(200, { ok: true })
  }

  async deleteAccount(req: Req, caller: Caller): Promise<Reply> {
    const body = readJson(req)
    const email = caller.account.rec.email
    if (typeof body.confirm !== 'string' || body.confirm.trim().toLowerCase() !== email)
      throw new ApiError(400, 'invalid_request', 'Type your email address to confirm.')
    const account = await this.recheck(caller, body.password)
    if (this.ctx.billing !== undefined) await cancelForDeletion(this.ctx.billing.stripe, account)
    await this.ctx.deleteAccount(account.id)
    await this.ctx.billing?.meter.forget(account.id).catch(() => {})
    await this.sessions.destroyAccount(account.id)
    return jsonReply(200, { deleted: true }, { setCookies: [clearSessionCookie(req.secure)] })
  }

  /** The account when the password is right; see the class comment for the throttles. */
  private async login1(req: Req, email: string, password: unknown) {
    const pair = `${email}\u0000${req.ip}`
    const now = this.ctx.clock.now()
    const wait = Math.max(
      this.perAddressEmail.retryAfter(pair, now),
      this.perAddress.retryAfter(req.ip, now),
    )
    if (wait) throw tooMany(wait)
    if (!this.known.has(pair)) {
      const slow = this.perEmail.take(email, now)
      if (!slow.ok) throw tooMany(slow.retryAfter)
    }
    // Counted now, before the hash: concurrent guesses see each other.
    this.perAddressEmail.fail(pair, now)
    this.perAddress.fail(req.ip, now)
    let account: Awaited<ReturnType<typeof this.ctx.accounts.verifyPassword>>
    try {
      account = await this.verify(email, password)
    } catch (err) {
      // Refused before hashing (the hasher is busy): the attempt never happened.
      this.perAddressEmail.undo(pair)
      this.perAddress.undo(req.ip)
      throw err
    }
    if (!account)
      throw new ApiError(401, 'unauthorized', 'That email and password do not match an account.')
    this.perAddressEmail.reset(pair)
    this.perAddress.undo(req.ip)
    this.known.set(pair, true)
    return account
  }

  /** A signed-in user's password, checked again before a change; throttled per session only. */
  private async recheck(caller: Caller, password: unknown) {
    const key = caller.cookie ?? caller.account.id
    const now = this.ctx.clock.now()
    const wait = this.perSession.retryAfter(key, now)
    if (wait) throw tooMany(wait)
    this.perSession.fail(key, now)
    const account = await this.verify(caller.account.rec.email, password).catch((err) => {
      this.perSession.undo(key)
      throw err
    })
    if (!account) throw new ApiError(403, 'wrong_password', 'Your current password is not right.')
    this.perSession.reset(key)
    return account
  }

  private verify(email: string, password: unknown) {
    return typeof password === 'string' && password !== ''
      ? this.ctx.accounts.verifyPassword(email, password)
      : Promise.resolve(undefined)
  }

  /** Entries held by the throttles (a metric; each is bounded). */
  sizes(): Record<string, number> {
    return {
      login_address_email: this.perAddressEmail.size,
      login_address: this.perAddress.size,
      login_email: this.perEmail.size,
      login_session: this.perSession.size,
      login_known: this.known.size,
      signup_address: this.signups.size,
    }
  }
}

function tooMany(seconds: number): ApiError {
  const minutes = Math.ceil(seconds / 60)
  return new ApiError(
    429,
    'rate_limited',
    `Too many attempts. Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`,
    { 'Retry-After': String(seconds) },
  )
}
