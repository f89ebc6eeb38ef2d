// The signed-in account: who it is, its usage overview, and its plan.
import type { Context } from '../context.js'
import type { Plan } from '../services/plans.js'
import { ServiceError } from '../services/service-error.js'
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
    return jsonReply(200, {
      current: this.ctx.plans.get(c.account.rec.plan).id,
      default: info.default,
      upgradeUrl: info.upgradeUrl,
      plans: info.plans.map((p) => ({ ...p, switchable: this.switchable(p) })),
    })
  }

  async setPlan(req: Req, c: Caller): Promise<Reply> {
    const id = readJson(req).plan
    const plan =
      typeof id === 'string' && this.ctx.plans.has(id) ? this.ctx.plans.get(id) : undefined
    if (!plan) throw new ServiceError(400, 'invalid_plan', 'There is no such plan.')
    if (!this.switchable(plan)) {
      throw new ServiceError(
        403,
        'plan_not_self_serve',
        `The ${plan.name} plan is switched on by the operator; the plan page says how to ask.`,
      )
    }
    await this.ctx.accounts.setPlan(c.account, plan.id)
    return jsonReply(200, { plan })
  }

  /** The plan new accounts get is always open to them; others when the operator says so. */
  private switchable(p: Plan): boolean {
    return p.selfServe || p.id === this.ctx.plans.defaultId
  }
}
