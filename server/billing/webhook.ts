// POST /billing/stripe/webhook: Stripe's events, mounted only when Stripe is on (off, the
// path falls to the catch-all 404 `not_found`). The body is kept as its raw bytes, which
// the signature covers; any change to them (parsing and re-serialising) would break it.
import type { Context } from '../context.js'
import type { TemplatedApp } from '../http/uws.js'
import { errorReply, fail, jsonReply, route } from '../http/pipeline.js'
import { R } from '../metrics.js'
import type { Billing } from '../services/billing/index.js'
import { stripeTransient } from '../services/billing/stripe-client.js'

export const WEBHOOK_PATH = '/billing/stripe/webhook'
/** Stripe's events are a few KiB; its documented ceiling is well under this. */
const MAX_EVENT_BYTES = 1024 * 1024

export function mountStripeWebhook(app: TemplatedApp, ctx: Context, billing: Billing): void {
  route(
    app,
    ctx,
    'post',
    WEBHOOK_PATH,
    MAX_EVENT_BYTES,
    async (req) => {
      try {
        const event = billing.events.verify(req.body, req.headers['stripe-signature'])
        const outcome = await billing.events.handle(event)
        if (outcome !== 'ignored')
          ctx.log.info({ event: event.id, type: event.type, outcome }, 'Stripe event')
        return jsonReply(200, { received: true, outcome })
      } catch (err) {
        if (stripeTransient(err)) {
          ctx.log.warn({ err: (err as Error).message }, 'Stripe could not be read; the event waits')
          return fail(503, 'unavailable', 'Stripe could not be reached; send the event again.', {
            headers: { 'Retry-After': '10' },
          })
        }
        return errorReply(err)
      }
    },
    R.billing_webhook,
  )
  route(app, ctx, 'any', WEBHOOK_PATH, 0, () =>
    fail(405, 'method_not_allowed', 'Stripe events are POSTed here.', {
      headers: { Allow: 'POST' },
    }),
  )
}
