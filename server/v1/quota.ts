// The daily quota, as every counted request meets it: refused past `requestsPerDay`, except
// on a metered plan (with Stripe on), where requests past it are served and billed up to the
// account's monthly spending cap.
import type { Context } from '../context.js'
import type { Account } from '../services/accounts.js'
import { secondsToNextMonth } from '../services/billing/spend.js'
import { secondsToMidnight } from '../services/limits.js'
import type { Plan } from '../services/plans.js'

export interface QuotaRefusal {
  code: 'quota_exceeded' | 'spending_cap_reached'
  message: string
  /** Seconds, for Retry-After. */
  retryAfter: number
}

/** The refusal for `n` more requests now, or null when they are served. */
export function quotaRefusal(
  ctx: Context,
  account: Account,
  plan: Plan,
  n: number,
  now: number,
): QuotaRefusal | null {
  const quota = plan.requestsPerDay
  if (quota === null) return null
  const used = ctx.usage.today(account.id, now).requests
  if (used + n <= quota) return null
  const code = ctx.billing
    ? ctx.billing.spend.refusal(account, plan, used, n, now)
    : 'quota_exceeded'
  if (code === null) return null
  if (code === 'spending_cap_reached')
    return {
      code,
      message: `This month's requests past the ${plan.id} plan's ${quota} a day have reached the account's spending cap.`,
      retryAfter: secondsToNextMonth(now),
    }
  return {
    code,
    message:
      n === 1
        ? `The ${plan.id} plan allows ${quota} requests per UTC day.`
        : `This transaction's ${n} ops would pass the ${plan.id} plan's ${quota} requests per UTC day.`,
    retryAfter: secondsToMidnight(now),
  }
}
