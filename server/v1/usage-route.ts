// GET /v1/usage: the account's plan, today's counters, storage and the last 30 days.
import { publicPlan } from '../plans.js'
import type { DayUsage } from '../usage.js'
import type { Call } from './call.js'

const DAYS = 30

export function usageReport(call: Call): void {
  const { ctx } = call
  const account = call.account!
  call.async()
  ctx.usage.days(account, DAYS).then(
    (days) => {
      const plan = ctx.plans.get(account.rec.plan)
      const strip = ({ storageBytes: _s, ...d }: DayUsage) => d
      const today = strip(days[days.length - 1]!)
      // This request counts once it is answered; report the figures as they stand before it.
      const rows = ctx.namespaces.list(account)
      const body = {
        plan: publicPlan(plan),
        today: {
          ...today,
          quotaRemaining:
            plan.requestsPerDay === null ? null : Math.max(0, plan.requestsPerDay - today.requests),
        },
        storage: {
          bytes: rows.reduce((n, r) => n + r.bytes, 0),
          keys: rows.reduce((n, r) => n + r.keys, 0),
          namespaces: rows.map(({ name, keys, bytes }) => ({ name, keys, bytes })),
        },
        days: days.map(strip),
      }
      call.send(200, JSON.stringify(body))
    },
    (err) => call.error(err),
  )
}
