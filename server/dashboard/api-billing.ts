// The plan page's way to Stripe: a Checkout session for a paid plan, and the customer portal
// once subscribed. Mounted only when Stripe is on.
import type { Context } from '../context.js'
import type { Billing } from '../services/billing/index.js'
import { meters } from '../services/billing/meter.js'
import { MAX_CAP_CENTS } from '../services/billing/spend.js'
import { ApiError } from '../wire/errors.js'
import type { Caller } from './guard.js'
import { type Reply, type Req, jsonReply, readJson } from '../http/pipeline.js'
import { redirect } from './pages.js'

/** This site's origin as the browser reached it: where Stripe sends the browser back. */
export function siteOrigin(req: Req): string {
  return `${req.secure ? 'https' : 'http'}://${req.headers.host}`
}

export class BillingApi {
  constructor(
    private ctx: Context,
    private billing: Billing,
  ) {}

  /** POST /dashboard/api/billing/checkout {plan}: the Checkout session's URL to go to. */
  async checkout(req: Req, c: Caller): Promise<Reply> {
    const id = readJson(req).plan
    const plan =
      typeof id === 'string' && this.ctx.plans.has(id) ? this.ctx.plans.get(id) : undefined
    if (!plan) throw new ApiError(400, 'invalid_plan', 'There is no such plan.')
    const url = await this.billing.checkout.start(c.account, plan, siteOrigin(req))
    return jsonReply(200, { url })
  }

  /**
   * PUT /dashboard/api/billing/spending-cap {cents}: the most a month's requests past the
   * included quota may cost (whole cents of the plan's currency); null removes the cap.
   */
  async setSpendingCap(req: Req, c: Caller): Promise<Reply> {
    const cents: unknown = readJson(req).cents
    const plan = this.ctx.plans.get(c.account.rec.plan)
    if (!meters(c.account, plan) || plan.meteredCentsPerThousand === null)
      throw new ApiError(
        409,
        'not_metered',
        'A spending cap is for an account subscribed to a metered plan.',
      )
    if (
      cents !== null &&
      !(
        typeof cents === 'number' &&
        Number.isSafeInteger(cents) &&
        cents >= 0 &&
        cents <= MAX_CAP_CENTS
      )
    )
      throw new ApiError(
        400,
        'invalid_request',
        `The cap is a whole number of cents from 0 to ${MAX_CAP_CENTS}, or null for none.`,
      )
    await this.billing.spend.setCap(c.account, cents as number | null)
    return jsonReply(200, { spendingCapCents: cents })
  }

  /**
   * GET /billing/portal: a link, so it is followed like one; it only opens the account's own
   * portal, and a page of another site cannot have a signed-in browser follow it unnoticed
   * (Sec-Fetch-Site), nor read where it leads.
   */
  async portal(req: Req, c: Caller | undefined): Promise<Reply> {
    if (!c) return redirect('/login?next=%2Fplan')
    const site = req.headers['sec-fetch-site']
    if (site && site !== 'same-origin' && site !== 'none') return redirect('/plan')
    try {
      return redirect(await this.billing.portal.url(c.account, `${siteOrigin(req)}/plan`))
    } catch (err) {
      this.ctx.log.warn({ err: (err as Error).message }, 'no billing portal session')
      return redirect('/plan?billing=unavailable')
    }
  }
}
