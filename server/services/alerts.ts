// Usage alerts: an account crossing 80% and 100% of its daily request quota (once each per
// UTC day), of its storage quota (once per upward crossing, and again only after it fell
// below 70%; a write refused for the quota counts as reaching 100%) and of a metered plan's
// monthly spending cap (once each per month; the figures come from billing, through
// `spend()`). A crossing is marked by a record created once, whoever asks first, so however
// many front ends see it, one notification goes to the account's webhook. The dashboard's
// banner is `active()`: what holds now.
//
// Storage crossings are counted in episodes: `storageEpisode` (a counter of the account's
// `alerts` usage record) moves on once the account is below 70% after a crossing, and the
// marks of a crossing name their episode. Moving it on is an addition made under a token
// named for the episode it leaves, so two front ends seeing the fall at once move it once.
import { LRUCache } from 'lru-cache'
import type { Store } from '../store/types.js'
import type { Account, Accounts } from './accounts.js'
import type { Namespaces } from './namespaces.js'
import type { PlanBook } from './plans.js'
import type { Usage } from './usage.js'
import type { Webhooks } from './webhooks.js'

export type Metric = 'requests' | 'storage' | 'spend'
export const PERCENTS = [80, 100] as const
/** Storage alerts re-arm below this share of the quota. */
const REARM = 0.7

export interface Alert {
  metric: Metric
  percent: 80 | 100
  value: number
  limit: number
}

/** Billing's figures for an account on a metered plan this month, or null (none). */
export type SpendOf = (account: Account) => Promise<{ cents: number; capCents: number } | null>

const date = (ms: number) => new Date(ms).toISOString().slice(0, 10)

export class Alerts {
  /** Marks this front end made or saw, so a crossing costs a store call once, not per pass. */
  private seen = new LRUCache<string, true>({ max: 100_000 })
  /**
   * Accounts seen below 70% of their storage with nothing to re-arm: not read again for a
   * minute while they stay there (a usage pass would otherwise read for every active one).
   */
  private calm = new LRUCache<string, true>({ max: 100_000, ttl: 60_000 })
  private spendOf: SpendOf = async () => null

  constructor(
    private store: Store,
    private accounts: Accounts,
    private plans: PlanBook,
    private usage: Usage,
    private namespaces: Namespaces,
    private webhooks: Webhooks,
  ) {}

  /** Where billing says what a metered account has spent this month, against its cap. */
  setSpendSource(fn: SpendOf): void {
    this.spendOf = fn
  }

  /** Creates the crossing's mark; true for the one caller that made it (it notifies). */
  private async mark(accountId: string, name: string): Promise<boolean> {
    const key = `${accountId}/${name}`
    if (this.seen.has(key)) return false
    const made = await this.store.records.create('alert', key, { at: new Date().toISOString() })
    this.seen.set(key, true)
    return made === 'created'
  }

  private async send(accountId: string, a: Alert): Promise<void> {
    await this.webhooks.notify(accountId, {
      type: 'usage.threshold',
      account: accountId,
      metric: a.metric,
      percent: a.percent,
      value: a.value,
      limit: a.limit,
      at: new Date().toISOString(),
    })
  }

  /** After a usage pass: the account's requests today and its stored bytes. */
  async observe(accountId: string, requests: number, storageBytes: number): Promise<void> {
    const account = await this.accounts.get(accountId)
    if (account === undefined || account.deleted) return
    const plan = this.plans.get(account.rec.plan)
    const quota = plan.requestsPerDay
    if (quota !== null && quota > 0) {
      const now = Date.now()
      const today = date(now)
      for (const p of PERCENTS) {
        if (requests < (quota * p) / 100) continue
        if (!(await this.mark(accountId, `requests/${today}/${p}`))) continue
        await this.send(accountId, {
          metric: 'requests',
          percent: p,
          value: requests,
          limit: quota,
        })
        // A day's marks are needed only that day: the oldest kept go (the records stay few).
        const old = date(now - 2 * 86_400_000)
        await this.store.records
          .delete('alert', `${accountId}/requests/${old}/${p}`)
          .catch(() => {})
      }
    }
    await this.storage(account, storageBytes, false)
  }

  /** A write refused for the storage quota: the account has reached 100%. */
  async refused(account: Account, wouldBe: number): Promise<void> {
    await this.storage(account, wouldBe, true)
  }

  private async episode(accountId: string): Promise<number> {
    const rec = await this.store.records.get<Record<string, number>>('usage', `${accountId}/alerts`)
    return rec?.storageEpisode ?? 0
  }

  private async storage(account: Account, bytes: number, refused: boolean): Promise<void> {
    const max = this.plans.get(account.rec.plan).maxStorageBytes
    if (max === null || max <= 0) return
    const share = bytes / max
    const id = account.id
    if (share < REARM && !refused && this.calm.has(id)) return
    this.calm.delete(id)
    const ep = await this.episode(id)
    if (share < REARM && !refused) {
      // Below 70% after a crossing in this episode: the next crossing is a new one.
      const crossed = await this.store.records.get('alert', `${id}/storage/${ep}/80`)
      const full = crossed ?? (await this.store.records.get('alert', `${id}/storage/${ep}/100`))
      if (full !== undefined) {
        await this.usageAdd(id, ep)
        for (const p of PERCENTS)
          await this.store.records.delete('alert', `${id}/storage/${ep}/${p}`)
      }
      this.calm.set(id, true)
      return
    }
    for (const p of PERCENTS) {
      // A refused write reached 100%, and so crossed 80% on its way if nothing had yet.
      if (!refused && share < p / 100) continue
      if (await this.mark(id, `storage/${ep}/${p}`))
        await this.send(id, { metric: 'storage', percent: p, value: bytes, limit: max })
    }
  }

  private async usageAdd(id: string, ep: number): Promise<void> {
    await this.store.records.add(
      'usage',
      `${id}/alerts`,
      { storageEpisode: 1 },
      {},
      `rearm.${id}.${ep}`,
    )
  }

  /**
   * Billing's figures for the month (`month` as `2026-12`): notifies each crossing of the
   * spending cap once.
   */
  async spend(accountId: string, cents: number, capCents: number, month: string): Promise<void> {
    if (capCents <= 0) return
    for (const p of PERCENTS) {
      if (cents < (capCents * p) / 100) continue
      if (await this.mark(accountId, `spend/${month}/${p}`))
        await this.send(accountId, { metric: 'spend', percent: p, value: cents, limit: capCents })
    }
  }

  /** What holds now, for the dashboard's banner: the highest threshold of each metric. */
  async active(account: Account): Promise<Alert[]> {
    const out: Alert[] = []
    const plan = this.plans.get(account.rec.plan)
    const level = (share: number): 0 | 80 | 100 => (share >= 1 ? 100 : share >= 0.8 ? 80 : 0)
    if (plan.requestsPerDay !== null && plan.requestsPerDay > 0) {
      const requests = (await this.usage.days(account, 1))[0]!.requests
      const p = level(requests / plan.requestsPerDay)
      if (p !== 0)
        out.push({ metric: 'requests', percent: p, value: requests, limit: plan.requestsPerDay })
    }
    const max = plan.maxStorageBytes
    if (max !== null && max > 0) {
      const bytes = await this.namespaces.storageBytes(account)
      let p: 0 | 80 | 100 = level(bytes / max)
      // A refused write reached 100% whatever is stored now, while the account stays near it.
      if (p === 80) {
        const ep = await this.episode(account.id)
        if (await this.store.records.get('alert', `${account.id}/storage/${ep}/100`)) p = 100
      }
      if (p !== 0) out.push({ metric: 'storage', percent: p, value: bytes, limit: max })
    }
    const spend = await this.spendOf(account)
    if (spend && spend.capCents > 0) {
      const p = level(spend.cents / spend.capCents)
      if (p !== 0)
        out.push({ metric: 'spend', percent: p, value: spend.cents, limit: spend.capCents })
    }
    return out
  }

  /** The account's alert records go (the account is deleted). */
  async forget(accountId: string): Promise<void> {
    for (;;) {
      const page = await this.store.records.list('alert', `${accountId}/`, undefined, 1000)
      if (page.items.length === 0) return
      await this.store.records.batch(
        page.items.map(([id]) => ({ kind: 'alert' as const, id, delete: true as const })),
      )
    }
  }
}
