// Sign-up, log-in, log-out, password change and account deletion. Email and password rules
// are the accounts module's own, so the dashboard and the command line agree on them.
import { checkNewPassword, normalizeEmail } from '../accounts.js'
import type { Context } from '../context.js'
import { ServiceError } from '../service-error.js'
import type { Caller } from './guard.js'
import { type Reply, type Req, jsonReply, readJson } from './http.js'
import { type SessionStore, clearSessionCookie, sessionCookie } from './sessions.js'
import { Throttle } from './throttle.js'

const WINDOW_MS = 15 * 60_000

export class AuthApi {
  // Guessing is slow per account wherever it comes from, and per address across accounts.
  private perEmail = new Throttle(5, WINDOW_MS)
  private perAddress = new Throttle(20, WINDOW_MS)
  private signups = new Throttle(20, 60 * 60_000)

  constructor(
    private ctx: Context,
    private sessions: SessionStore,
  ) {}

  async signup(req: Req): Promise<Reply> {
    const body = readJson(req)
    const wait = this.signups.retryAfter(req.ip)
    if (wait) throw tooMany(wait)
    // Checked here as well: an account made without a password could never log in.
    const made = await this.ctx.accounts.create({
      email: normalizeEmail(body.email),
      password: checkNewPassword(body.password),
    })
    this.signups.fail(req.ip)
    const { cookie, session } = await this.sessions.create(made.account.id)
    return jsonReply(
      201,
      {
        account: made.account,
        apiKey: { ...made.apiKey.key, secret: made.apiKey.secret },
        csrf: session.csrf,
      },
      { setCookies: [sessionCookie(cookie, req.secure)] },
    )
  }

  async login(req: Req): Promise<Reply> {
    const body = readJson(req)
    const email = normalizeEmail(body.email)
    const account = await this.checkPassword(req, email, body.password, 401)
    this.perEmail.reset(email)
    const { cookie, session } = await this.sessions.create(account.id)
    return jsonReply(
      200,
      { account: account.view(), csrf: session.csrf },
      { setCookies: [sessionCookie(cookie, req.secure)] },
    )
  }

  async logout(req: Req, caller: Caller): Promise<Reply> {
    await this.sessions.destroy(caller.cookie)
    return jsonReply(200, { ok: true }, { setCookies: [clearSessionCookie(req.secure)] })
  }

  async changePassword(req: Req, caller: Caller): Promise<Reply> {
    const body = readJson(req)
    const next = checkNewPassword(body.password)
    const account = await this.checkPassword(req, caller.account.rec.email, body.current, 403)
    await this.ctx.accounts.setPassword(account, next)
    // Whoever else holds a session for this account is signed out.
    await this.sessions.destroyAccount(account.id, caller.cookie)
    return jsonReply(200, { ok: true })
  }

  async deleteAccount(req: Req, caller: Caller): Promise<Reply> {
    const body = readJson(req)
    const email = caller.account.rec.email
    if (typeof body.confirm !== 'string' || body.confirm.trim().toLowerCase() !== email)
      throw new ServiceError(400, 'invalid_request', 'Type your email address to confirm.')
    const account = await this.checkPassword(req, email, body.password, 403)
    await this.ctx.deleteAccount(account.id)
    await this.sessions.destroyAccount(account.id)
    return jsonReply(200, { deleted: true }, { setCookies: [clearSessionCookie(req.secure)] })
  }

  /** The account when the password is right; throttled per email and per address. */
  private async checkPassword(req: Req, email: string, password: unknown, status: 401 | 403) {
    const wait = Math.max(this.perEmail.retryAfter(email), this.perAddress.retryAfter(req.ip))
    if (wait) throw tooMany(wait)
    const account =
      typeof password === 'string' && password !== ''
        ? await this.ctx.accounts.verifyPassword(email, password)
        : undefined
    if (!account) {
      this.perEmail.fail(email)
      this.perAddress.fail(req.ip)
      throw status === 401
        ? new ServiceError(401, 'unauthorized', 'That email and password do not match an account.')
        : new ServiceError(403, 'wrong_password', 'Your current password is not right.')
    }
    return account
  }
}

function tooMany(seconds: number): ServiceError {
  const minutes = Math.ceil(seconds / 60)
  return new ServiceError(
    429,
    'rate_limited',
    `Too many attempts. Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`,
    { 'Retry-After': String(seconds) },
  )
}
