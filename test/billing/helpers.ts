// The pieces the billing tests share: a plans file with a plan paid through Stripe, a server
// pointed at the Stripe double, and an account signed in to the dashboard.
import { logIn } from '../helpers/dashboard-api.js'
import { plan } from '../helpers/plans.js'
import { type TestServer, startServer } from '../helpers/server.js'
import type { StripeDouble } from '../helpers/stripe-double.js'

export const PASSWORD = 'long enough password'
export const PRO_PRICE = 'price_cairn_pro'

export const billingPlans = () => ({
  plans: [
    plan({ id: 'free', name: 'Free', requestsPerDay: 1000 }),
    {
      ...plan({ id: 'pro', name: 'Pro', requestsPerDay: 100000 }),
      priceUsdPerMonth: 10,
      selfServe: false,
      stripePriceId: PRO_PRICE,
    },
  ],
  default: 'free',
  upgradeUrl: null,
})

interface Tap {
  teardown(fn: () => unknown): void
}

/** A server on the double (downgrades looked for every half second), stopped at teardown. */
export async function billingServer(
  t: Tap,
  double: StripeDouble,
  extra: { dataDir?: string } = {},
) {
  const srv = await startServer({
    plans: billingPlans(),
    args: double.flags(),
    env: { CAIRN_BILLING_SCAN_MS: '500' },
    ...extra,
  })
  t.teardown(() => srv.stop())
  double.webhookUrl = `${srv.url}/billing/stripe/webhook`
  return srv
}

/** An account with a password, signed in to the dashboard: its cookie and CSRF token. */
export async function signedIn(srv: TestServer) {
  const acct = await srv.createAccount(undefined, { password: PASSWORD })
  const session = await logIn(srv.url, acct.email, PASSWORD)
  if (session.status !== 200) throw new Error(`log-in failed: ${session.status}`)
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${srv.url}/dashboard/api${path}`, {
      method,
      headers: {
        cookie: session.cookie!,
        origin: srv.url,
        'x-csrf-token': session.csrf,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    return { status: res.status, body: (await res.json()) as any }
  }
  return { ...acct, cookie: session.cookie!, call }
}

/** The account's plan as /v1 applies it. */
export async function planOf(srv: TestServer, apiKey: string): Promise<string> {
  const res = await fetch(`${srv.baseUrl}/usage`, { headers: { 'x-api-key': apiKey } })
  const body = (await res.json()) as any
  return body.plan.id
}

/** Polls until `ok` holds, for at most `ms`; resolves with whether it did. */
export async function eventually(ms: number, ok: () => Promise<boolean>): Promise<boolean> {
  const end = Date.now() + ms
  for (;;) {
    if (await ok()) return true
    if (Date.now() > end) return false
    await new Promise((r) => setTimeout(r, 250))
  }
}

export const METERED_PRICE = 'price_cairn_metered'
export const METERED_FLAT_PRICE = 'price_cairn_metered_flat'
export const METER_EVENT = 'cairn_requests'
/** The metered plan's included requests a day. */
export const INCLUDED = 5

/** Plans with a metered one: 5 requests a day included, each one past them a cent. */
export const meteredPlans = () => ({
  ...billingPlans(),
  plans: [
    ...billingPlans().plans,
    {
      ...plan({ id: 'metered', name: 'Metered', requestsPerDay: INCLUDED }),
      priceUsdPerMonth: 5,
      selfServe: false,
      stripePriceId: METERED_FLAT_PRICE,
      stripeMeteredPriceId: METERED_PRICE,
      meterEventName: METER_EVENT,
      meteredCentsPerThousand: 1000,
    },
  ],
})

/** Moves a signed-in account to `plan` as Stripe would: checkout, payment, the event. */
export async function subscribe(
  double: StripeDouble,
  a: Awaited<ReturnType<typeof signedIn>>,
  plan: string,
): Promise<{ customer: string }> {
  const res = await a.call('POST', '/billing/checkout', { plan })
  if (res.status !== 200) throw new Error(`checkout: ${res.status}`)
  const { session } = double.completeCheckout(/checkout\/(\w+)$/.exec(res.body.url)![1]!)
  const sent = await double.send('checkout.session.completed', session)
  if (sent.body.outcome !== 'handled') throw new Error(`event: ${JSON.stringify(sent.body)}`)
  const ok = await eventually(10_000, async () => {
    return (await a.call('GET', '/plans')).body.current === plan
  })
  if (!ok) throw new Error(`the account never reached plan ${plan}`)
  return { customer: session.customer }
}
