// Stripe's customer portal, where a subscribed account changes its card, sees its invoices
// and cancels: a short-lived session made when the link is followed.
import type Stripe from 'stripe'
import type { Account } from '../accounts.js'
import { ApiError } from '../../wire/errors.js'

export class Portal {
  constructor(private stripe: Stripe) {}

  /** The portal session's URL for the account's customer. */
  async url(account: Account, returnUrl: string): Promise<string> {
    const customer = account.rec.stripe?.customerId
    if (customer === undefined)
      throw new ApiError(409, 'no_subscription', 'This account has never subscribed.')
    const session = await this.stripe.billingPortal.sessions.create({
      customer,
      return_url: returnUrl,
    })
    return session.url
  }
}
