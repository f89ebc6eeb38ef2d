// What a metered account spends this month, and the answer to a request past its included
// quota: served and billed, refused for the spending cap, or (not metered) refused for the
// quota as before. The hot path asks synchronously: this month's earlier days are read from
// usage in the background (once per account and day, refreshed at each usage pass) and today
// comes from the day's live counters, so the cap holds across front ends as exactly as the
// daily quota does (within a usage pass).
import { LRUCache } from 'lru-cache'
import type { Account, Accounts } from '../accounts.js'
import type { Alerts } from '../alerts.js'
import type { Plan, PlanBook } from '../plans.js'
import type { Usage } from '../usage.js'
import { meters } from './meter.js'

const DAY_MS = 86_400_000

/** The largest cap an account may set: $1,000,000 a month. */
export const MAX_CAP_CENTS = 100_000_000

interface Earlier {
  /** The UTC day (days since the epoch) this was read on. */
  day: number
  /** Requests past the quota on this month's days before that one. */
  over: number
}

const month = (ms: number) => new Date(ms).toISOString().slice(0, 7)

export class Spend {
  private earlier = new LRUCache<string, Earlier>({ max: 100_000 })
  private loading = new Set<string>()

  constructor(
    private accounts: Accounts,
    private plans: PlanBook,
    private usage: Usage,
    private alerts: Alerts,
  ) {
    alerts.setSpendSource(async (account) => {
      const plan = this.plans.get(account.rec.plan)
      const cap = account.rec.spendingCapCents
      if (cap === undefined || !meters(account, plan) || plan.meteredCentsPerThousand === null)
        return null
      await this.load(account, Date.now())
      return { cents: this.cents(account, plan, 0, Date.now()), capCents: cap }
    })
    // Not awaited: its reads of usage wait for the pass that calls it to end.
    usage.onPass((id) => {
      this.passed(id).catch(() => {})
    })
  }

  /** After a usage pass: the month's earlier days read afresh, and the cap's alerts fed. */
  private async passed(accountId: string): Promise<void> {
    const account = await this.accounts.get(accountId)
    if (account === undefined) return
    const plan = this.plans.get(account.rec.plan)
    if (!meters(account, plan)) return
    const now = Date.now()
    await this.load(account, now)
    const cap = account.rec.spendingCapCents
    if (cap !== undefined && plan.meteredCentsPerThousand !== null)
      await this.alerts.spend(accountId, this.cents(account, plan, 0, now), cap, month(now))
  }

  /** Reads this month's days before today (once per account and day). */
  private async load(account: Account, now: number): Promise<void> {
    const today = Math.floor(now / DAY_MS)
    if (this.earlier.get(account.id)?.day === today) return
    const plan = this.plans.get(account.rec.plan)
    const quota = plan.requestsPerDay ?? 0
    const dayOfMonth = new Date(now).getUTCDate()
    const days = await this.usage.days(account, dayOfMonth)
    let over = 0
    for (const d of days.slice(0, -1)) over += Math.max(0, d.requests - quota)
    this.earlier.set(account.id, { day: today, over })
  }

  /** Cents this month's requests past the quota cost, with `more` requests beyond today's. */
  private cents(account: Account, plan: Plan, more: number, now: number): number {
    const quota = plan.requestsPerDay ?? 0
    const today = this.usage.today(account.id, now).requests
    const over = (this.earlier.get(account.id)?.over ?? 0) + Math.max(0, today + more - quota)
    return (over * (plan.meteredCentsPerThousand ?? 0)) / 1000
  }

  /**
   * The refusal for `n` more requests of an account that has `used` of its quota today, or
   * null (served). Past the quota, a metered account is served up to its spending cap.
   */
  refusal(
    account: Account,
    plan: Plan,
    used: number,
    n: number,
    now: number,
  ): 'quota_exceeded' | 'spending_cap_reached' | null {
    if (plan.requestsPerDay === null || used + n <= plan.requestsPerDay) return null
    if (!meters(account, plan)) return 'quota_exceeded'
    const cap = account.rec.spendingCapCents
    if (cap === undefined || plan.meteredCentsPerThousand === null) return null
    if (this.earlier.get(account.id)?.day !== Math.floor(now / DAY_MS)) this.loadSoon(account, now)
    return this.cents(account, plan, n, now) > cap ? 'spending_cap_reached' : null
  }

  private loadSoon(account: Account, now: number): void {
    if (this.loading.has(account.id) || this.loading.size >= 10_000) return
    this.loading.add(account.id)
    this.load(account, now)
      .catch(() => {})
      .finally(() => this.loading.delete(account.id))
  }

  /** Sets (or, with null, removes) the account's monthly cap. */
  async setCap(account: Account, cents: number | null): Promise<void> {
    await this.accounts.update(account, (rec) => {
      const { spendingCapCents: _old, ...rest } = rec
      return cents === null ? rest : { ...rest, spendingCapCents: cents }
    })
  }
}

/** Seconds until the next UTC month begins: when a spending cap's month is over. */
export function secondsToNextMonth(now: number): number {
  const d = new Date(now)
  const next = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)
  return Math.max(1, Math.ceil((next - now) / 1000))
}
