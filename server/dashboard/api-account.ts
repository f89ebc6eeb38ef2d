// The signed-in account: who it is, its usage overview, and its plan.
import type { Context } from '../context.js'
import { meters } from '../services/billing/meter.js'
import { isLive } from '../services/billing/subscription.js'
import type { Plan } from '../services/plans.js'
import { ApiError } from '../wire/errors.js'
import { usageReport } from '../services/usage-report.js'
import type { Caller } from './guard.js'
import { type Reply, type Req, jsonReply, readJson } from '../http/pipeline.js'

export class AccountApi {
  constructor(private ctx: Context) {}

  async me(_req: Req, c: Caller): Promise<Reply> {
    return jsonReply(200, {
      account: c.account.view(),
      plan: this.ctx.plans.get(c.account.rec.plan),
      csrf: c.session.csrf,
    })
  }

  /** The figures /v1/usage reports, plus each day's stored bytes for the storage chart. */
  async overview(_req: Req, c: Caller): Promise<Reply> {
    return jsonReply(200, await usageReport(this.ctx, c.account))
  }

  async plans(_req: Req, c: Caller): Promise<Reply> {
    const info = this.ctx.plans.info()
    const stripe = this.ctx.billing !== undefined
    const s = c.account.rec.stripe
    const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString())
    const plan = this.ctx.plans.get(c.account.rec.plan)
    // A metered plan's part: the cap, and the hours sent to Stripe's meter.
    const metered =
      this.ctx.billing !== undefined && meters(c.account, plan)
        ? {
            includedPerDay: plan.requestsPerDay,
            centsPerThousand: plan.meteredCentsPerThousand,
            spendingCapCents: c.account.rec.spendingCapCents ?? null,
            sent: await this.ctx.billing.meter.sent(c.account.id),
          }
        : null
    return jsonReply(200, {
      current: this.ctx.plans.get(c.account.rec.plan).id,
      default: info.default,
      upgradeUrl: info.upgradeUrl,
      plans: info.plans.map((p) => ({
        ...p,
        switchable: this.switchable(p),
        checkout: stripe && p.stripePriceId !== null,
      })),
      // Off: null, and the page is as it was before Stripe.
      billing: stripe
        ? {
            subscribed: s?.subscriptionId !== undefined,
            live: isLive(s?.status),
            status: s?.status ?? null,
            plan: s?.plan ?? null,
            periodEnd: iso(s?.periodEnd),
            downgradeAt: iso(s?.downgradeAt),
            metered,
          }
        : null,
    })
  }

  async setPlan(req: Req, c: Caller): Promise<Reply> {
    const id = readJson(req).plan
    const plan =
      typeof id === 'string' && this.ctx.plans.has(id) ? this.ctx.plans.get(id) : undefined
    if (!plan) throw new ApiError(400, 'invalid_plan', 'There is no such plan.')
    if (!this.switchable(plan)) {
      throw new ApiError(
        403,
        'plan_not_self_serve',
        `The ${plan.name} plan is switched on by the operator; the plan page says how to ask.`,
      )
    }
    const s = c.account.rec.stripe
    if (this.ctx.billing !== undefined && s?.subscriptionId !== undefined && isLive(s.status))
      throw new ApiError(
        409,
        'already_subscribed',
        'This account pays for its plan through Stripe: change or cancel it in the billing portal.',
      )
    await this.ctx.accounts.setPlan(c.account, plan.id)
    return jsonReply(200, { plan })
  }

  /**
   * The plan new accounts get is always open to them; others when the operator says so, but
   * never one paid through Stripe while Stripe is on: that one comes with its subscription.
   */
  private switchable(p: Plan): boolean {
    if (this.ctx.billing !== undefined && p.stripePriceId !== null) return false
    return p.selfServe || p.id === this.ctx.plans.defaultId
  }
}
