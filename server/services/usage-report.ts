// The usage report: the plan, today's counters with the quota left, storage by namespace,
// the last 30 days, the last 48 hours and today's requests by namespace. GET /v1/usage sends the public part; the dashboard's overview adds
// what its charts need (each day's stored bytes, namespace creation times).
import type { Account } from './accounts.js'
import type { History } from './history.js'
import type { NamespaceRow, Namespaces } from './namespaces.js'
import { type Plan, type PlanBook, publicPlan } from './plans.js'
import { type DayUsage, type HourUsage, OPS, type NamespaceToday, type Usage } from './usage.js'

export const REPORT_DAYS = 30
export const REPORT_HOURS = 48

/** A namespace in the report: its storage now and its requests today. */
export interface NamespaceUsage {
  name: string
  keys: number
  bytes: number
  /** What superseded versions and tombstones kept for history take. */
  historyBytes: number
  today: NamespaceToday
}

export interface UsageReport {
  plan: Plan
  today: DayUsage & { quotaRemaining: number | null }
  storage: { bytes: number; keys: number; namespaces: NamespaceRow[] }
  days: DayUsage[]
  hours: HourUsage[]
  namespaces: NamespaceUsage[]
}

export async function usageReport(
  svc: { usage: Usage; plans: PlanBook; namespaces: Namespaces; history: History },
  account: Account,
  /** Which namespaces the caller may see (a key limited to some sees only those). */
  visible: (name: string) => boolean = () => true,
): Promise<UsageReport> {
  const counted = await svc.usage.report(account, REPORT_DAYS, REPORT_HOURS)
  const days = counted.days
  const plan = svc.plans.get(account.rec.plan)
  const today = days[days.length - 1]!
  const rows = (await svc.namespaces.list(account)).filter((r) => visible(r.name))
  const held = await Promise.all(
    rows.map((r) => {
      const info = account.namespaces.get(r.name)
      return info === undefined ? 0 : svc.history.bytes(info)
    }),
  )
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
    hours: counted.hours,
    namespaces: rows.map((r, i) => ({
      name: r.name,
      keys: r.keys,
      bytes: r.bytes,
      historyBytes: held[i]!,
      today: counted.namespaces.get(r.name) ?? {
        requests: 0,
        operations: Object.fromEntries(OPS.map((op) => [op, 0])),
      },
    })),
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
    hours: r.hours,
    namespaces: r.namespaces,
  }
}
