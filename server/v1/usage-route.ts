// GET /v1/usage: the account's plan, today's counters, storage and the last 30 days.
// The request counts once it is answered: the figures are as they stand before it.
import { publicReport, usageReport } from '../usage-report.js'
import type { Call } from './call.js'

export function usageReportRoute(call: Call): void {
  call.async()
  usageReport(call.ctx, call.account!).then(
    (r) => call.send(200, JSON.stringify(publicReport(r))),
    (err) => call.error(err),
  )
}
