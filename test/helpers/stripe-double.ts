// A small double of Stripe's HTTP API, for the server to call instead of api.stripe.com
// (`--stripe-api-url`): a real HTTP server on loopback answering the few endpoints Cairn
// uses (customers, Checkout and portal sessions, subscriptions, billing meter events), with Stripe's form-encoded
// requests, its object shapes and its error body. The test drives it as Stripe would: it
// completes a checkout, changes a subscription, and sends events signed with the official
// `stripe` package's generateTestHeaderString.
import { randomBytes } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import Stripe from 'stripe'

export const SECRET_KEY = 'sk_test_cairn_double'
export const WEBHOOK_SECRET = 'whsec_cairn_double'

export interface Call {
  method: string
  path: string
  body: Record<string, any>
}

/** `a[b][0]=x&a[c]=y` as Stripe's API reads it: nested objects (list indexes as keys). */
function parseForm(text: string): Record<string, any> {
  const out: Record<string, any> = {}
  for (const [name, value] of new URLSearchParams(text)) {
    const path = name.replace(/\]/g, '').split('[')
    let at = out
    for (const [i, seg] of path.entries()) {
      if (i === path.length - 1) at[seg] = value
      else at = at[seg] ??= {}
    }
  }
  return out
}

const listOf = (o: Record<string, any> | undefined) => (o ? Object.values(o) : [])

export class StripeDouble {
  url = ''
  readonly calls: Call[] = []
  readonly customers = new Map<string, any>()
  readonly sessions = new Map<string, any>()
  readonly subscriptions = new Map<string, any>()
  /**
   * Every meter event request that reached the double, in order, duplicates included (Stripe
   * refuses an identifier it has had: the double too, but the request is still here).
   */
  readonly meterEvents: Array<Record<string, any>> = []
  /** Answers 500 to this many of the next API calls (Stripe having a bad minute). */
  failNext = 0
  private seq = 0
  private idempotent = new Map<string, any>()
  private server = http.createServer((req, res) => this.serve(req, res))
  private signer = new Stripe(SECRET_KEY)

  constructor(
    /** Where the server under test takes events: its /billing/stripe/webhook URL. */
    public webhookUrl = '',
  ) {}

  static async start(t: { teardown(fn: () => unknown): void }): Promise<StripeDouble> {
    const d = new StripeDouble()
    await new Promise<void>((resolve) => d.server.listen(0, '127.0.0.1', resolve))
    d.url = `http://127.0.0.1:${(d.server.address() as AddressInfo).port}`
    t.teardown(() => d.stop())
    return d
  }

  stop(): Promise<void> {
    this.server.closeAllConnections()
    return new Promise((resolve) => this.server.close(() => resolve()))
  }

  /** The `cairn serve` flags that point a server at this double. */
  flags(): string[] {
    return [
      '--stripe-secret-key',
      SECRET_KEY,
      '--stripe-webhook-secret',
      WEBHOOK_SECRET,
      '--stripe-api-url',
      this.url,
    ]
  }

  /** Unique across doubles and runs, as Stripe's are: tests on Redis share one store. */
  private id(prefix: string): string {
    return `${prefix}_${randomBytes(6).toString('hex')}${++this.seq}`
  }

  callsTo(method: string, path: string): Call[] {
    return this.calls.filter((c) => c.method === method && c.path === path)
  }

  private serve(req: http.IncomingMessage, res: http.ServerResponse): void {
    let text = ''
    req.setEncoding('utf8')
    req.on('data', (c: string) => {
      text += c
    })
    req.on('end', () => {
      const url = new URL(req.url ?? '/', this.url)
      const answer = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' })
        res.end(JSON.stringify(body))
      }
      // The pages Stripe hosts, where the browser lands.
      const page = /^\/(checkout|portal)\/([A-Za-z0-9_]+)$/.exec(url.pathname)
      if (page) {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
        res.end(
          `<!doctype html><title>Stripe ${page[1]} (double)</title><h1 id="where">${page[1]} ${page[2]}</h1>`,
        )
        return
      }
      if (req.headers.authorization !== `Bearer ${SECRET_KEY}`)
        return answer(401, {
          error: { type: 'invalid_request_error', message: 'Invalid API Key provided.' },
        })
      const call: Call = { method: req.method ?? '', path: url.pathname, body: parseForm(text) }
      this.calls.push(call)
      if (this.failNext > 0) {
        this.failNext--
        return answer(500, { error: { type: 'api_error', message: 'Something went wrong.' } })
      }
      const key = req.headers['idempotency-key']
      const remembered = typeof key === 'string' ? this.idempotent.get(key) : undefined
      if (remembered !== undefined && req.method === 'POST') return answer(200, remembered)
      const [status, body] = this.route(call)
      if (typeof key === 'string' && status === 200) this.idempotent.set(key, body)
      answer(status, body)
    })
  }

  private route({ method, path, body }: Call): [number, unknown] {
    const missing = (what: string): [number, unknown] => [
      404,
      {
        error: {
          type: 'invalid_request_error',
          code: 'resource_missing',
          message: `No such ${what}`,
        },
      },
    ]
    if (method === 'POST' && path === '/v1/customers') {
      const c = {
        id: this.id('cus'),
        object: 'customer',
        email: body.email,
        metadata: body.metadata ?? {},
      }
      this.customers.set(c.id, c)
      return [200, c]
    }
    if (method === 'POST' && path === '/v1/checkout/sessions') {
      if (!this.customers.has(body.customer)) return missing(`customer: '${body.customer}'`)
      const id = this.id('cs_test')
      const s = {
        id,
        object: 'checkout.session',
        mode: body.mode,
        customer: body.customer,
        client_reference_id: body.client_reference_id ?? null,
        metadata: body.metadata ?? {},
        subscription_data: body.subscription_data ?? {},
        line_items: listOf(body.line_items),
        success_url: body.success_url,
        cancel_url: body.cancel_url,
        status: 'open',
        subscription: null as string | null,
        url: `${this.url}/checkout/${id}`,
      }
      this.sessions.set(id, s)
      return [200, s]
    }
    if (method === 'POST' && path === '/v1/billing_portal/sessions') {
      if (!this.customers.has(body.customer)) return missing(`customer: '${body.customer}'`)
      const id = this.id('bps')
      return [
        200,
        {
          id,
          object: 'billing_portal.session',
          customer: body.customer,
          return_url: body.return_url,
          url: `${this.url}/portal/${id}`,
        },
      ]
    }
    if (method === 'POST' && path === '/v1/billing/meter_events') {
      const dup = this.meterEvents.some((e) => e.identifier === body.identifier)
      this.meterEvents.push(body)
      if (dup)
        return [
          400,
          {
            error: {
              type: 'invalid_request_error',
              message: `An event already exists with identifier ${body.identifier}.`,
            },
          },
        ]
      return [
        200,
        {
          object: 'billing.meter_event',
          created: Math.floor(Date.now() / 1000),
          event_name: body.event_name,
          identifier: body.identifier,
          livemode: false,
          payload: body.payload,
          timestamp: Number(body.timestamp),
        },
      ]
    }
    const sub = /^\/v1\/subscriptions\/([A-Za-z0-9_]+)$/.exec(path)
    if (method === 'GET' && sub) {
      const s = this.subscriptions.get(sub[1]!)
      return s ? [200, s] : missing(`subscription: '${sub[1]}'`)
    }
    if (method === 'DELETE' && sub) {
      const s = this.subscriptions.get(sub[1]!)
      if (!s || s.status === 'canceled') return missing(`subscription: '${sub[1]}'`)
      s.status = 'canceled'
      return [200, s]
    }
    return missing(`route: ${method} ${path}`)
  }

  /**
   * The customer pays: the session's subscription is made (active, one item of its price,
   * the period ending at `periodEnd` ms) and the session completes. `oldApi` puts the period
   * on the subscription, as API versions before 2025-03-31 do, instead of on its item.
   */
  completeCheckout(sessionId: string, opts: { periodEnd?: number; oldApi?: boolean } = {}) {
    const session = this.sessions.get(sessionId)
    if (!session) throw new Error(`no session ${sessionId}`)
    const end = Math.floor((opts.periodEnd ?? Date.now() + 30 * 86400_000) / 1000)
    const start = end - 30 * 86400
    const item: Record<string, unknown> = {
      id: this.id('si'),
      object: 'subscription_item',
      price: { id: session.line_items[0].price, object: 'price' },
      quantity: 1,
    }
    const s: Record<string, any> = {
      id: this.id('sub'),
      object: 'subscription',
      customer: session.customer,
      status: 'active',
      cancel_at_period_end: false,
      cancel_at: null,
      metadata: session.subscription_data.metadata ?? {},
      items: { object: 'list', data: [item] },
    }
    if (opts.oldApi) Object.assign(s, { current_period_start: start, current_period_end: end })
    else Object.assign(item, { current_period_start: start, current_period_end: end })
    this.subscriptions.set(s.id, s)
    Object.assign(session, { status: 'complete', subscription: s.id })
    return { session, subscription: s }
  }

  /** Changes a subscription as Stripe would (status, cancel_at_period_end, ...). */
  update(subscriptionId: string, changes: Record<string, unknown>, periodEnd?: number) {
    const s = this.subscriptions.get(subscriptionId)
    if (!s) throw new Error(`no subscription ${subscriptionId}`)
    Object.assign(s, changes)
    if (periodEnd !== undefined) {
      const end = Math.floor(periodEnd / 1000)
      if (s.current_period_end !== undefined) s.current_period_end = end
      else for (const item of s.items.data) item.current_period_end = end
    }
    return s
  }

  /** An event as Stripe sends it: its JSON body and a Stripe-Signature header for it. */
  event(
    type: string,
    object: unknown,
    opts: { id?: string; timestamp?: number; secret?: string } = {},
  ): { id: string; payload: string; header: string } {
    const id = opts.id ?? this.id('evt')
    const payload = JSON.stringify({
      id,
      object: 'event',
      api_version: '2026-10-28.endive',
      created: Math.floor(Date.now() / 1000),
      livemode: false,
      pending_webhooks: 1,
      type,
      data: { object },
    })
    const header = this.signer.webhooks.generateTestHeaderString({
      payload,
      secret: opts.secret ?? WEBHOOK_SECRET,
      ...(opts.timestamp === undefined ? {} : { timestamp: opts.timestamp }),
    })
    return { id, payload, header }
  }

  /** Sends an event (as made by `event`) to the server; resolves with its answer. */
  async deliver(e: { payload: string; header: string }, to = this.webhookUrl) {
    const res = await fetch(to, {
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=utf-8', 'stripe-signature': e.header },
      body: e.payload,
    })
    return { status: res.status, body: (await res.json()) as any }
  }

  /** Makes an event and sends it. */
  send(type: string, object: unknown, opts: Parameters<StripeDouble['event']>[2] = {}) {
    return this.deliver(this.event(type, object, opts))
  }
}
