// The plan page's way to Stripe: a Checkout session for a paid plan, and the customer portal
// once subscribed. Mounted only when Stripe is on.
import type { Context } from '../context.js'
import type { Billing } from '../services/billing/index.js'
import { ServiceError } from '../services/service-error.js'
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
    if (!plan) throw new ServiceError(400, 'invalid_plan', 'There is no such plan.')
    const url = await this.billing.checkout.start(c.account, plan, siteOrigin(req))
    return jsonReply(200, { url })
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
