// Who is calling, and may they change anything: the session behind the cookie and its
// account, and for every state-changing call a same-origin check plus a CSRF token in a
// header (a page on another origin can neither read the token nor send the header without
// a CORS preflight, which the dashboard never grants).
import type { Account } from '../services/accounts.js'
import type { Context } from '../context.js'
import { ApiError } from '../wire/errors.js'
import type { Req } from '../http/pipeline.js'
import {
  PRE_SESSION_COOKIE,
  SESSION_COOKIE,
  type Session,
  type SessionStore,
  sameToken,
} from '../services/sessions.js'

export interface Caller {
  cookie: string
  session: Session
  account: Account
}

const crossSite = () => new ApiError(403, 'forbidden', 'Cross-site requests are not allowed.')

/** A state-changing call must come from a page of this very site. */
export function checkSameOrigin(req: Req): void {
  const site = req.headers['sec-fetch-site']
  if (site && site !== 'same-origin') throw crossSite()
  const source = req.headers.origin || req.headers.referer
  let sourceHost = ''
  try {
    if (source && source !== 'null') sourceHost = new URL(source).host.toLowerCase()
  } catch {}
  // Host, not X-Forwarded-Host: the deployment guide has the proxy pass Host through.
  if (!sourceHost || sourceHost !== req.headers.host!.toLowerCase()) throw crossSite()
}

/** The signed-in caller, or undefined (no cookie, an ended session, a deleted account). */
export async function currentCaller(
  req: Req,
  ctx: Context,
  sessions: SessionStore,
): Promise<Caller | undefined> {
  const cookie = req.cookies[SESSION_COOKIE]
  const session = await sessions.get(cookie)
  if (!session || !cookie) return undefined
  const account = await ctx.accounts.get(session.accountId)
  if (!account || account.deleted) return undefined
  return { cookie, session, account }
}

export function checkCsrf(req: Req, caller: Caller | undefined): void {
  const expected = caller ? caller.session.csrf : req.cookies[PRE_SESSION_COOKIE]
  if (!sameToken(req.headers['x-csrf-token'], expected)) {
    throw new ApiError(
      403,
      'csrf_failed',
      'The page is out of date or the request came from another site. Reload the page and try again.',
    )
  }
}
