// Metered plans: after each UTC hour, one Stripe meter event per account with requests past
// its plan's included quota that hour (requests counted after the day's `requestsPerDay`
// ran out). An hour is sent once, whichever front end looks first and across restarts: its
// `meter` record (`<account id>/<hour>`) is created before sending, so only its maker sends,
// and the event's identifier (`<account id>:<hour>`) is one Stripe keeps unique, so a send
// taken over from a front end that stopped part way is not counted twice either.
import type Stripe from 'stripe'
import type { Logger } from '../../log.js'
import type { Records } from '../../store/types.js'
import type { Account, Accounts } from '../accounts.js'
import type { Plan, PlanBook } from '../plans.js'
import type { HourUsage, Usage } from '../usage.js'
import { stripeTransient } from './stripe-client.js'
import { Periodic } from '../periodic.js'

const HOUR_MS = 3_600_000
const DAY_MS = 86_400_000
/**
 * An hour is sent this long after it ends: every front end's usage pass (every couple of
 * seconds) has added its counts by then. Well inside the contract's 5 minutes.
 */
const SETTLE_MS = 30_000
/** A claim whose sender went quiet this long is taken over (Stripe's identifier keeps it once). */
const TAKEOVER_MS = 60_000
/** Sent hours are remembered past the days looked back over, and past Stripe's 35. */
const KEEP_MS = 40 * DAY_MS

export interface MeterRecord {
  state: 'claimed' | 'sent'
  /** Requests past the included quota that hour. */
  value: number
  /** When claimed or sent (ISO). */
  at: string
}

export interface SentHour {
  hour: string
  requests: number
  sentAt: string
}

/** Whether the account's plan bills requests past its quota: a metered plan, and a customer. */
export function meters(account: Account, plan: Plan): boolean {
  return (
    plan.stripeMeteredPriceId !== null &&
    plan.meterEventName !== null &&
    plan.requestsPerDay !== null &&
    account.rec.stripe?.customerId !== undefined
  )
}

/** Each hour's requests past the included quota, the day's count running from its midnight. */
export function overByHour(hours: HourUsage[], quota: number): Map<string, number> {
  const out = new Map<string, number>()
  let day = ''
  let before = 0
  for (const h of hours) {
    if (h.hour.slice(0, 10) !== day) {
      day = h.hour.slice(0, 10)
      before = 0
    }
    const after = before + h.requests
    const over = after - Math.max(before, quota)
    if (over > 0) out.set(h.hour, over)
    before = after
  }
  return out
}

export class Meter {
  private readonly every = new Periodic(
    () => this.flush(),
    (err) => this.log.warn({ err: (err as Error).message }, 'sending meter events failed'),
  )

  constructor(
    private stripe: Stripe,
    private records: Records,
    private accounts: Accounts,
    private plans: PlanBook,
    private usage: Usage,
    private log: Logger,
    /** Added to the clock that says which hours are over (tests only: docs/billing.md). */
    private skewMs = 0,
  ) {}

  /**
   * Sends every finished hour of yesterday and today not sent yet, for every account on a
   * metered plan; resolves with what this call sent.
   */
  async flush(): Promise<Array<{ account: string } & SentHour>> {
    const now = Date.now()
    const over = now + this.skewMs - SETTLE_MS
    const sent: Array<{ account: string } & SentHour> = []
    for await (const account of this.accounts.all()) {
      const plan = this.plans.get(account.rec.plan)
      if (!meters(account, plan)) continue
      // From yesterday's midnight: each hour's overage needs its day's earlier hours.
      const from = (Math.floor(now / DAY_MS) - 1) * 24
      const hours = await this.usage.hourly(account.id, Math.floor(now / HOUR_MS) - from + 1)
      for (const [hour, value] of overByHour(hours, plan.requestsPerDay!)) {
        if (Date.parse(hour) + HOUR_MS > over) continue
        const at = await this.sendHour(account, plan, hour, value)
        if (at !== undefined) sent.push({ account: account.id, hour, requests: value, sentAt: at })
      }
    }
    return sent
  }

  /** Claims the hour and sends it; the time sent, or undefined when it was not this call's. */
  private async sendHour(
    account: Account,
    plan: Plan,
    hour: string,
    value: number,
  ): Promise<string | undefined> {
    const id = `${account.id}/${hour}`
    const claim: MeterRecord = { state: 'claimed', value, at: new Date().toISOString() }
    if ((await this.records.create('meter', id, claim)) !== 'created') {
      const held = await this.records.get<MeterRecord>('meter', id)
      if (held === undefined || held.state === 'sent') return undefined
      if (Date.now() - Date.parse(held.at) < TAKEOVER_MS) return undefined
      // Its sender stopped part way: sent again under the same identifier, counted once.
      claim.value = held.value
      await this.records.put('meter', id, claim)
    }
    try {
      await this.stripe.billing.meterEvents.create(
        {
          event_name: plan.meterEventName!,
          identifier: `${account.id}:${hour}`,
          timestamp: Math.floor(Date.parse(hour) / 1000),
          payload: {
            stripe_customer_id: account.rec.stripe!.customerId,
            value: String(claim.value),
          },
        },
        { idempotencyKey: `meter:${account.id}:${hour}` },
      )
    } catch (err) {
      // Stripe keeps identifiers unique: a 400 for this one on a takeover means it has it.
      if (stripeTransient(err) || !/identifier/i.test((err as Error).message ?? '')) {
        this.log.warn(
          { account: account.id, hour, err: (err as Error).message },
          'meter event not sent; tried again after a minute',
        )
        return undefined
      }
    }
    const at = new Date().toISOString()
    await this.records.put('meter', id, { state: 'sent', value: claim.value, at } as MeterRecord, {
      expiresAt: Date.now() + KEEP_MS,
    })
    this.log.info({ account: account.id, hour, requests: claim.value }, 'meter event sent')
    return at
  }

  /** The account's hours sent to Stripe, newest first (at most `limit`). */
  async sent(accountId: string, limit = 48): Promise<SentHour[]> {
    const out: SentHour[] = []
    let after: string | undefined
    do {
      const page = await this.records.list<MeterRecord>('meter', `${accountId}/`, after)
      for (const [id, r] of page.items)
        if (r.state === 'sent')
          out.push({ hour: id.slice(accountId.length + 1), requests: r.value, sentAt: r.at })
      after = page.next
    } while (after)
    return out.reverse().slice(0, limit)
  }

  /** The account's records go (the account is deleted). */
  async forget(accountId: string): Promise<void> {
    for (;;) {
      const page = await this.records.list('meter', `${accountId}/`, undefined, 1000)
      if (page.items.length === 0) return
      await this.records.batch(
        page.items.map(([id]) => ({ kind: 'meter' as const, id, delete: true as const })),
      )
    }
  }

  /** Looks every `everyMs` until stop(). */
  start(everyMs: number): void {
    this.every.start(everyMs)
  }

  stop(): Promise<void> {
    return this.every.stop()
  }
}
