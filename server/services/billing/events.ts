// Stripe's webhook events: the signature checked on the raw body, each event id acted on once
// (its claim kept in storage, shared by every front end), and for the events that concern a
// subscription, the subscription read again from Stripe before anything changes (an event's
// copy may be stale, and events come in any order).
import Stripe from 'stripe'
import type { Logger } from '../../log.js'
import type { Accounts } from '../accounts.js'
import type { PlanBook } from '../plans.js'
import { ApiError } from '../../wire/errors.js'
import type { Records } from '../../store/types.js'
import { type SubscriptionSync, readSubscription } from './subscription.js'

/** Signatures older than this are refused (Stripe's own default tolerance). */
export const TOLERANCE_SECONDS = 300
/** How long an event id is remembered: past Stripe's three days of retries. */
const REMEMBER_MS = 30 * 24 * 3600_000
/** A claim older than this was left by a front end that stopped part way: taken over. */
const CLAIM_MS = 60_000
/** How long a second delivery of an event waits for the first to be acted on. */
const WAIT_MS = 10_000
const EVENT_ID = /^[A-Za-z0-9_]{1,255}$/

/** The events that may change a subscription's state; every other type is ignored. */
export const HANDLED = [
  'checkout.session.completed',
  'checkout.session.async_payment_succeeded',
  'customer.subscription.created',
  'customer.subscription.updated',
  'customer.subscription.deleted',
  'customer.subscription.paused',
  'customer.subscription.resumed',
  'invoice.paid',
  'invoice.payment_failed',
] as const

interface EventClaim {
  state: 'working' | 'done'
  at: number
  type: string
}

export type EventOutcome = 'handled' | 'ignored' | 'duplicate'

const idOf = (v: unknown): string | undefined =>
  typeof v === 'string'
    ? v
    : typeof (v as { id?: unknown })?.id === 'string'
      ? (v as { id: string }).id
      : undefined

export class StripeEvents {
  constructor(
    private stripe: Stripe,
    private webhookSecret: string,
    private records: Records,
    private accounts: Accounts,
    private plans: PlanBook,
    private sync: SubscriptionSync,
    private log: Logger,
  ) {}

  /** The event, when `signature` signs `body` with the webhook secret and is recent. */
  verify(body: Buffer, signature: string | undefined): Stripe.Event {
    if (!signature)
      throw new ApiError(400, 'invalid_signature', 'The Stripe-Signature header is missing.')
    let event: Stripe.Event
    try {
      event = this.stripe.webhooks.constructEvent(
        body,
        signature,
        this.webhookSecret,
        TOLERANCE_SECONDS,
      )
    } catch (err) {
      if (err instanceof Stripe.errors.StripeSignatureVerificationError)
        throw new ApiError(
          400,
          'invalid_signature',
          'The Stripe-Signature header does not sign this body, or is more than 300 seconds old.',
        )
      throw new ApiError(400, 'invalid_json', 'The event is not valid JSON.')
    }
    if (typeof event?.id !== 'string' || !EVENT_ID.test(event.id) || typeof event.type !== 'string')
      throw new ApiError(400, 'invalid_request', 'The event has no usable id or type.')
    return event
  }

  async handle(event: Stripe.Event): Promise<EventOutcome> {
    const subscription = this.subscriptionOf(event)
    if (subscription === undefined) return 'ignored'
    if (!(await this.claim(event))) return 'duplicate'
    try {
      await this.act(event, subscription)
    } catch (err) {
      // Not acted on: Stripe sends it again, and then it is acted on.
      await this.records.delete('stripe_event', event.id).catch(() => {})
      throw err
    }
    const done: EventClaim = { state: 'done', at: Date.now(), type: event.type }
    await this.records.put('stripe_event', event.id, done, { expiresAt: Date.now() + REMEMBER_MS })
    return 'handled'
  }

  /** The subscription an event concerns, for the handled types. */
  private subscriptionOf(event: Stripe.Event): string | undefined {
    if (!(HANDLED as readonly string[]).includes(event.type)) return undefined
    const o = event.data?.object as Record<string, any> | undefined
    if (o === undefined || o === null) return undefined
    if (event.type.startsWith('checkout.session.'))
      return o.mode === 'subscription' ? idOf(o.subscription) : undefined
    if (event.type.startsWith('invoice.'))
      return idOf(o.parent?.subscription_details?.subscription) ?? idOf(o.subscription)
    return idOf(o.id)
  }

  /**
   * Whether this call may act on the event: it made the claim, or took over one left long
   * ago. One already done answers false. One another call (here or on another front end) is
   * acting on now is waited for, so both answers are 200; should that take past WAIT_MS, the
   * answer is a 409 and Stripe sends the event again later.
   */
  private async claim(event: Stripe.Event): Promise<boolean> {
    const mine = (): EventClaim => ({ state: 'working', at: Date.now(), type: event.type })
    const waitUntil = Date.now() + WAIT_MS
    for (;;) {
      if ((await this.records.create('stripe_event', event.id, mine())) === 'created') return true
      const held = await this.records.get<EventClaim>('stripe_event', event.id)
      if (held?.state === 'done') return false
      if (held !== undefined && Date.now() - held.at >= CLAIM_MS) {
        await this.records.put('stripe_event', event.id, mine())
        return true
      }
      if (Date.now() >= waitUntil)
        throw new ApiError(
          409,
          'event_in_progress',
          'This event is being handled; send it again later.',
        )
      await new Promise((r) => setTimeout(r, 100))
    }
  }

  private async act(event: Stripe.Event, subscriptionId: string): Promise<void> {
    const sub = readSubscription(
      await this.stripe.subscriptions.retrieve(subscriptionId),
      this.plans,
    )
    const o = event.data.object as Record<string, any>
    // The account: the customer's, as recorded at its checkout; else the one the checkout
    // session or the subscription names, which must then have that very customer.
    const named = [
      await this.records.get<string>('stripe_customer', sub.customer),
      o.client_reference_id,
      o.metadata?.account,
    ].find((v): v is string => typeof v === 'string' && v !== '')
    const account = named === undefined ? undefined : await this.accounts.get(named)
    // The account's own record (read fresh by apply) must name the customer too.
    if (account === undefined || (await this.sync.apply(account, sub)) === 'not_ours') {
      this.log.warn(
        { event: event.id, type: event.type, subscription: sub.id },
        'a Stripe subscription of no account here; nothing changed',
      )
    }
  }
}
