// An account that goes stops paying: its subscription is canceled at Stripe first, so a
// deleted account is never billed again. Should Stripe not answer, the deletion waits.
import type Stripe from 'stripe'
import type { Account } from '../accounts.js'
import { ApiError } from '../../wire/errors.js'
import { isLive } from './subscription.js'

export async function cancelForDeletion(stripe: Stripe, account: Account): Promise<void> {
  const s = account.rec.stripe
  if (s?.subscriptionId === undefined || !(isLive(s.status) || s.status === 'unpaid')) return
  try {
    await stripe.subscriptions.cancel(s.subscriptionId)
  } catch (err) {
    // Canceled already (in the portal, or by Stripe): nothing left to stop.
    if ((err as { code?: string }).code === 'resource_missing') return
    throw new ApiError(
      503,
      'unavailable',
      'The subscription could not be canceled at Stripe just now, so the account is kept; try again in a minute.',
      { 'Retry-After': '30' },
    )
  }
}
