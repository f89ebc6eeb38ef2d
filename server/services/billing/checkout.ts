// Paying for a plan: the account's Stripe customer (made on its first checkout, with its
// email, and kept on the account), then a Checkout session for the plan's price. The plan
// itself changes only when Stripe's webhook says the subscription is paid (events.ts).
import type Stripe from 'stripe'
import type { Account, Accounts } from '../accounts.js'
import type { Plan } from '../plans.js'
import { ApiError } from '../../wire/errors.js'
import type { Records } from '../../store/types.js'
import { isLive } from './subscription.js'

export class Checkout {
  constructor(
    private stripe: Stripe,
    private accounts: Accounts,
    private records: Records,
  ) {}

  /** The Checkout session's URL, where the browser goes to pay for `plan`. */
  async start(account: Account, plan: Plan, origin: string): Promise<string> {
    if (plan.stripePriceId === null)
      throw new ApiError(400, 'invalid_plan', `The ${plan.name} plan is not paid through Stripe.`)
    const s = account.rec.stripe
    if (s?.subscriptionId !== undefined && isLive(s.status))
      throw new ApiError(
        409,
        'already_subscribed',
        'This account has a subscription already: change or cancel it in the billing portal.',
      )
    const customer = await this.customer(account)
    const session = await this.stripe.checkout.sessions.create({
      mode: 'subscription',
      customer,
      client_reference_id: account.id,
      metadata: { account: account.id, plan: plan.id },
      subscription_data: { metadata: { account: account.id, plan: plan.id } },
      // A metered price takes no quantity: Stripe bills what the meter events add up to.
      line_items: [
        { price: plan.stripePriceId, quantity: 1 },
        ...(plan.stripeMeteredPriceId === null ? [] : [{ price: plan.stripeMeteredPriceId }]),
      ],
      success_url: `${origin}/plan?checkout=done`,
      cancel_url: `${origin}/plan`,
    })
    if (!session.url) throw new Error('Stripe answered a Checkout session without a url')
    return session.url
  }

  /**
   * The account's customer id, made on first use. The idempotency key is the account's, so a
   * second checkout begun meanwhile (here or on another front end) gets the same customer.
   */
  async customer(account: Account): Promise<string> {
    const known = account.rec.stripe?.customerId
    if (known !== undefined) return known
    const made = await this.stripe.customers.create(
      { email: account.rec.email, metadata: { account: account.id } },
      { idempotencyKey: `cairn-customer-${account.id}` },
    )
    // The index first: an event that names the customer finds its account from then on.
    await this.records.put('stripe_customer', made.id, account.id)
    const rec = await this.accounts.update(account, (r) =>
      r.stripe?.customerId !== undefined ? r : { ...r, stripe: { customerId: made.id } },
    )
    if (rec === undefined) throw new ApiError(404, 'account_not_found', 'The account is gone.')
    return rec.stripe!.customerId
  }
}
