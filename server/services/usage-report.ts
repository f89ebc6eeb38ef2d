// The usage report: the plan, today's counters with the quota left, storage by namespace,
// and the last 30 days. GET /v1/usage sends the public part; the dashboard's overview adds
// what its charts need (each day's stored bytes, namespace creation times).
import type { Account } from './accounts.js'
import type { NamespaceRow, Namespaces } from './namespaces.js'
import { type Plan, type PlanBook, publicPlan } from './plans.js'
import type { DayUsage, Usage } from './usage.js'

export const REPORT_DAYS = 30

export interface UsageReport {
  plan: Plan
  today: DayUsage & { quotaRemaining: number | null }
  storage: { bytes: number; keys: number; namespaces: NamespaceRow[] }
  days: DayUsage[]
}

export async function usageReport(
  svc: { usage: Usage; plans: PlanBook; namespaces: Namespaces },
  account: Account,
  /** Which namespaces the caller may see (a key limited to some sees only those). */
  visible: (name: string) => boolean = () => true,
): Promise<UsageReport> {
  const days = await svc.usage.days(account, REPORT_DAYS)
  const plan = svc.plans.get(account.rec.plan)
  const today = days[days.length - 1]!
  const rows = (await svc.namespaces.list(account)).filter((r) => visible(r.name))
  return {
    plan,
    today: {
      ...today,
      quotaRemaining:
        plan.requestsPerDay === null ? null : Math.max(0, plan.requestsPerDay - today.requests),
    },
    storage: {
      bytes: rows.reduce((n, r) => n + r.bytes, 0),
      keys: rows.reduce((n, r) => n + r.keys, 0),
      namespaces: rows,
    },
    days,
  }
}

const day = ({ storageBytes: _s, ...d }: DayUsage) => d

/** The report as GET /v1/usage documents it. */
export function publicReport(r: UsageReport) {
  return {
    plan: publicPlan(r.plan),
    today: day(r.today),
    storage: {
      bytes: r.storage.bytes,
      keys: r.storage.keys,
      namespaces: r.storage.namespaces.map(({ name, keys, bytes }) => ({ name, keys, bytes })),
    },
    days: r.days.map(day),
  }
}
