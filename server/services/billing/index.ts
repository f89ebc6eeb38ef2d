// Paid plans through Stripe, the operator's choice: built only when the server is given both
// the secret key and the webhook secret (docs/billing.md). Off, nothing here exists, and the
// dashboard and the routes behave as they did before.
import type Stripe from 'stripe'
import type { Logger } from '../../log.js'
import type { Services } from '../index.js'
import { Checkout } from './checkout.js'
import { Downgrades } from './downgrades.js'
import { StripeEvents } from './events.js'
import { Meter } from './meter.js'
import { Portal } from './portal.js'
import { Spend } from './spend.js'
import { type StripeSettings, stripeClient } from './stripe-client.js'
import { SubscriptionSync } from './subscription.js'

export type { StripeSettings } from './stripe-client.js'

export class Billing {
  readonly stripe: Stripe
  readonly checkout: Checkout
  readonly portal: Portal
  readonly events: StripeEvents
  readonly downgrades: Downgrades
  /** Metered plans' hours sent to Stripe's billing meters. */
  readonly meter: Meter
  /** What metered accounts spend, against their caps. */
  readonly spend: Spend

  constructor(settings: StripeSettings, svc: Services, log: Logger, meterSkewMs = 0) {
    this.stripe = stripeClient(settings)
    const { store, accounts, plans, usage, alerts } = svc
    this.meter = new Meter(this.stripe, store.records, accounts, plans, usage, log, meterSkewMs)
    this.spend = new Spend(accounts, plans, usage, alerts)
    this.downgrades = new Downgrades(store.records, accounts, plans, log)
    const sync = new SubscriptionSync(accounts, plans, this.downgrades, log)
    this.checkout = new Checkout(this.stripe, accounts, store.records)
    this.portal = new Portal(this.stripe)
    this.events = new StripeEvents(
      this.stripe,
      settings.webhookSecret,
      store.records,
      accounts,
      plans,
      sync,
      log,
    )
  }

  /**
   * The settings when Stripe is on: both secrets given. One without the other is a setup
   * half done, said in the log; Stripe stays off.
   */
  static settings(
    c: { stripeSecretKey?: string; stripeWebhookSecret?: string; stripeApiUrl?: string },
    log: Logger,
  ): StripeSettings | undefined {
    const { stripeSecretKey: secretKey, stripeWebhookSecret: webhookSecret } = c
    if (secretKey === undefined && webhookSecret === undefined) return undefined
    if (secretKey === undefined || webhookSecret === undefined) {
      log.warn('Stripe stays off: it needs both --stripe-secret-key and --stripe-webhook-secret')
      return undefined
    }
    return { secretKey, webhookSecret, apiUrl: c.stripeApiUrl }
  }
}
