// GET /v1/usage: the account's plan, today's counters, storage and the last 30 days.
// The request counts once it is answered: the figures are as they stand before it. A key
// limited to some namespaces sees the storage of only those; request counters are the
// account's.
import { meters } from '../services/billing/meter.js'
import { publicReport, usageReport } from '../services/usage-report.js'
import type { Call } from './call.js'

export function usageReportRoute(call: Call): void {
  call.async()
  usageReport(call.ctx, call.account!, (name) => call.key!.allows(name)).then(
    (r) => {
      const body = publicReport(r)
      const account = call.account!
      // A metered account's cap belongs with the plan's limits it stretches.
      if (call.ctx.billing !== undefined && meters(account, r.plan))
        Object.assign(body.plan, { spendingCapCents: account.rec.spendingCapCents ?? null })
      call.send(200, JSON.stringify(body))
    },
    (err) => call.error(err),
  )
}
