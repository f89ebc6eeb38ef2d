// What a Stripe subscription, as Stripe has it now, means for its account: the plan it pays
// for, until when, and whether (and when) the account moves to the default plan. The plan
// changes only here, from a subscription just read from Stripe (never from an event's copy
// of it, which may be old or out of order). docs/billing.md lists the states.
import type Stripe from 'stripe'
import type { Logger } from '../../log.js'
import type { Account, AccountRecord, Accounts, StripeState } from '../accounts.js'
import type { Plan, PlanBook } from '../plans.js'
import type { Downgrades } from './downgrades.js'

/** Paid for now: the plan applies (past_due: Stripe is still retrying the payment, the grace). */
const LIVE = new Set(['active', 'trialing', 'past_due'])
/** No longer paid: the plan lasts to the end of the paid period, then the default plan. */
const LAPSED = new Set(['canceled', 'unpaid', 'paused', 'incomplete_expired'])

export const isLive = (status: string | undefined) => status !== undefined && LIVE.has(status)

export interface SubscriptionView {
  id: string
  customer: string
  status: string
  /** The plan whose stripePriceId is one of its items' prices; undefined when none is. */
  plan: Plan | undefined
  /** The end of the paid period (ms). */
  periodEnd: number | undefined
  /** When Stripe will end it by itself (cancel at period end, or at a set time), in ms. */
  endsAt: number | undefined
}

const idOf = (v: string | { id: string } | null | undefined) =>
  typeof v === 'string' ? v : (v?.id ?? '')

/**
 * The subscription's figures. The period's end is the subscription item's (API versions from
 * 2025-03-31), or the subscription's own in older versions.
 */
export function readSubscription(sub: Stripe.Subscription, plans: PlanBook): SubscriptionView {
  const old = sub as unknown as { current_period_end?: number }
  let plan: Plan | undefined
  let periodEnd: number | undefined
  for (const item of sub.items?.data ?? []) {
    const price = idOf(item.price) || idOf((item as unknown as { plan?: { id: string } }).plan)
    const p = plans.byStripePrice(price)
    if (p === undefined || (plan !== undefined && p.id !== plan.id)) continue
    plan = p
    const end = (item as { current_period_end?: number }).current_period_end
    if (typeof end === 'number') periodEnd = Math.max(periodEnd ?? 0, end * 1000)
  }
  if (periodEnd === undefined && typeof old.current_period_end === 'number')
    periodEnd = old.current_period_end * 1000
  let endsAt: number | undefined
  if (sub.cancel_at_period_end && periodEnd !== undefined) endsAt = periodEnd
  if (typeof sub.cancel_at === 'number') endsAt = Math.min(endsAt ?? Infinity, sub.cancel_at * 1000)
  return {
    id: sub.id,
    customer: idOf(sub.customer),
    status: sub.status,
    plan,
    periodEnd,
    endsAt,
  }
}

export class SubscriptionSync {
  constructor(
    private accounts: Accounts,
    private plans: PlanBook,
    private downgrades: Downgrades,
    private log: Logger,
  ) {}

  /**
   * Sets the account's plan and Stripe state from the subscription. Returns what it did, for
   * the log and the tests: 'plan' (the plan is the subscription's now), 'lapsing' (the default
   * plan follows at the period's end), 'downgraded' (that end has passed), 'unchanged', or
   * 'not_ours' (the account has another customer, or none: nothing is changed).
   */
  async apply(account: Account, sub: SubscriptionView, now = Date.now()): Promise<string> {
    let outcome = 'unchanged'
    const change = (rec: AccountRecord): AccountRecord => {
      const had = rec.stripe
      if (had === undefined || had.customerId !== sub.customer) {
        outcome = 'not_ours'
        return rec
      }
      // An event of an older subscription of the account (one replaced by a new checkout)
      // changes nothing, unless it is paid for and the current one is not.
      if (
        had.subscriptionId !== undefined &&
        had.subscriptionId !== sub.id &&
        (isLive(had.status) || !isLive(sub.status))
      )
        return rec
      const state: StripeState = {
        customerId: had.customerId,
        subscriptionId: sub.id,
        status: sub.status,
        plan: sub.plan?.id ?? had.plan,
        periodEnd: sub.periodEnd,
      }
      let plan = rec.plan
      if (isLive(sub.status) && sub.plan !== undefined) {
        plan = sub.plan.id
        state.downgradeAt = sub.endsAt
        outcome = 'plan'
      } else if (isLive(sub.status)) {
        this.log.warn(
          { account: rec.id, subscription: sub.id },
          'a subscription pays for a price no plan names; the plan stays as it is',
        )
      } else if (LAPSED.has(sub.status)) {
        // Only an account still on the plan the subscription paid for moves back: one the
        // operator moved elsewhere meanwhile stays where it was put.
        if (state.plan !== undefined && rec.plan === state.plan) {
          const at = Math.min(sub.periodEnd ?? now, sub.endsAt ?? Number.POSITIVE_INFINITY)
          if (at <= now) {
            plan = this.plans.defaultId
            outcome = 'downgraded'
          } else {
            state.downgradeAt = at
            outcome = 'lapsing'
          }
        }
      }
      return { ...rec, plan, stripe: state }
    }
    // The downgrade's entry goes first: should the account's write then fail, the timer
    // finds an entry the account does not back and drops it; the other way round, a
    // downgrade could be written with nothing to carry it out.
    if (LAPSED.has(sub.status) || sub.endsAt !== undefined)
      await this.downgrades.schedule(
        account.id,
        Math.min(sub.periodEnd ?? now, sub.endsAt ?? Number.POSITIVE_INFINITY),
      )
    const rec = await this.accounts.update(account, change)
    if (rec === undefined || outcome === 'not_ours') {
      // An entry made above is dropped by the timer: the account's record does not back it.
      return rec === undefined ? 'unchanged' : outcome
    }
    // From the record as written, which for an older subscription's event is unchanged.
    const due = rec.stripe?.downgradeAt
    if (due !== undefined) await this.downgrades.schedule(account.id, due)
    else await this.downgrades.cancel(account.id)
    this.log.info(
      { account: account.id, subscription: sub.id, status: sub.status, plan: rec.plan, outcome },
      'subscription read from Stripe',
    )
    return outcome
  }
}
