// The one Stripe client of the process, from the operator's settings: Stripe's own API, or
// another origin for it (--stripe-api-url: a test double, a proxy), http allowed there.
import Stripe from 'stripe'

export interface StripeSettings {
  secretKey: string
  webhookSecret: string
  /** An origin such as http://127.0.0.1:12111; undefined: api.stripe.com. */
  apiUrl?: string
}

/** Each call to Stripe gives up after this long (the SDK then retries, see below). */
const TIMEOUT_MS = 10_000

export function stripeClient(s: StripeSettings): Stripe {
  const config: Stripe.StripeConfig = {
    // Retries carry the same idempotency key, so a create sent twice makes one object.
    maxNetworkRetries: 2,
    timeout: TIMEOUT_MS,
    telemetry: false,
    appInfo: { name: 'Cairn' },
  }
  if (s.apiUrl !== undefined) {
    const u = new URL(s.apiUrl)
    const protocol = u.protocol === 'http:' ? 'http' : 'https'
    config.protocol = protocol
    // URL keeps an IPv6 host in brackets; Node's http module wants it bare.
    config.host = u.hostname.replace(/^\[(.*)\]$/, '$1')
    config.port = u.port || (protocol === 'http' ? 80 : 443)
  }
  return new Stripe(s.secretKey, config)
}

/** A Stripe failure that a later try may not meet (Stripe unreachable, rate limited, 5xx). */
export function stripeTransient(err: unknown): boolean {
  const e = err as { type?: string; statusCode?: number }
  return (
    e?.type === 'StripeConnectionError' ||
    e?.type === 'StripeAPIError' ||
    e?.type === 'StripeRateLimitError' ||
    (typeof e?.statusCode === 'number' && e.statusCode >= 500)
  )
}
