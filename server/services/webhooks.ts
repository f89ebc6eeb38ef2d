// Notification webhooks: one URL per account, with a secret of its own, and an outbox of
// deliveries kept in the store, so a restart loses none and every front end sends from the
// same outbox. A delivery is a POST of fixed bytes, signed at each attempt with
// `Cairn-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">` (the timestamp is
// the attempt's, so a receiver can refuse old replays; the body never changes). An attempt
// that gets no 2xx within TIMEOUT_MS is retried: first after `retryMs` (30 s by default),
// then with the delay doubling up to 120 times it (an hour), until 2,880 times it (24 h)
// have passed since the delivery was made. Redirects are not followed.
//
// Each attempt is claimed first (a record created once, whoever asks), so two front ends
// never send the same attempt; a claim whose sender died (a crash mid-send) is taken over
// as the next attempt once it is older than STALE_MS.
import { createHmac, randomBytes } from 'node:crypto'
import http from 'node:http'
import https from 'node:https'
import net from 'node:net'
import type { Logger } from '../log.js'
import type { Store } from '../store/types.js'
import type { Accounts } from './accounts.js'
import { ApiError } from '../wire/errors.js'
import {
  WebhookUrlError,
  checkWebhookHost,
  parseWebhookUrl,
  privateAddress,
  publicLookup,
} from './webhook-address.js'

export const TIMEOUT_MS = 10_000
const STALE_MS = TIMEOUT_MS + 5_000
/** Attempts sent at once by one front end. */
const CONCURRENCY = 4
/** Deliveries looked at per tick. */
const PAGE = 200
/** The most of an answer read (and thrown away): a receiver cannot make us hold more. */
const MAX_ANSWER = 64 * 1024
const OUTBOX = ':webhooks'
const CLAIMS = ':webhook-claims'

export interface WebhookOptions {
  /** Loopback, private and link-local hosts allowed (--allow-private-webhooks). */
  allowPrivate: boolean
  /** The first retry's delay; the rest of the schedule scales with it (see above). */
  retryMs: number
}

interface Hook {
  url: string
  secret: string
  createdAt: string
}

interface Delivery {
  account: string
  url: string
  body: string
  attempt: number
  /** When the next attempt is due (ms). */
  next: number
  /** When retrying stops (ms). */
  until: number
}

export class Webhooks {
  private timer: NodeJS.Timeout | undefined
  private sending = new Set<string>()
  private ticking = false

  constructor(
    private store: Store,
    private accounts: Accounts,
    private opts: WebhookOptions,
  ) {}

  private log: Logger | undefined

  private get records() {
    return this.store.records
  }

  /** The account's webhook without its secret, or null. */
  async get(accountId: string): Promise<{ url: string; createdAt: string } | null> {
    const hook = await this.records.get<Hook>('webhook', `${accountId}/hook`)
    return hook ? { url: hook.url, createdAt: hook.createdAt } : null
  }

  /** Sets the account's webhook, with a new secret: the only time the secret is shown. */
  async set(accountId: string, text: unknown): Promise<{ url: string; secret: string }> {
    let url: URL
    try {
      url = parseWebhookUrl(text)
      await checkWebhookHost(url, this.opts.allowPrivate)
    } catch (err) {
      if (err instanceof WebhookUrlError)
        throw new ApiError(400, 'invalid_webhook_url', err.message)
      throw err
    }
    const hook: Hook = {
      url: url.href,
      secret: `whsec_${randomBytes(24).toString('base64url')}`,
      createdAt: new Date().toISOString(),
    }
    await this.records.put('webhook', `${accountId}/hook`, hook)
    return { url: hook.url, secret: hook.secret }
  }

  async remove(accountId: string): Promise<boolean> {
    return this.records.delete('webhook', `${accountId}/hook`)
  }

  /**
   * Puts a notification in the outbox for the account's webhook, if it has one; resolves
   * whether it did. The payload's bytes are fixed here, for every attempt.
   */
  async notify(accountId: string, payload: object): Promise<boolean> {
    const hook = await this.records.get<Hook>('webhook', `${accountId}/hook`)
    if (!hook) return false
    const now = Date.now()
    const id = `${OUTBOX}/${now.toString(36)}-${randomBytes(6).toString('hex')}`
    const d: Delivery = {
      account: accountId,
      url: hook.url,
      body: JSON.stringify(payload),
      attempt: 1,
      next: now,
      until: now + this.opts.retryMs * 2880,
    }
    await this.records.put('webhook', id, d)
    this.kick()
    return true
  }

  /** Starts sending what the outbox holds (`cairn serve` only). */
  start(log?: Logger): void {
    if (log) this.log = log
    const every = Math.max(50, Math.min(1000, Math.floor(this.opts.retryMs / 4)))
    this.timer = setInterval(() => this.kick(), every)
    this.timer.unref()
    this.kick()
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer)
    this.timer = undefined
  }

  private kick(): void {
    if (this.ticking || this.timer === undefined) return
    this.ticking = true
    this.tick()
      .catch((err) => this.log?.warn({ err: (err as Error).message }, 'webhook outbox unreadable'))
      .finally(() => {
        this.ticking = false
      })
  }

  private async tick(): Promise<void> {
    const page = await this.records.list<Delivery>('webhook', `${OUTBOX}/`, undefined, PAGE)
    const now = Date.now()
    for (const [id, d] of page.items) {
      if (this.sending.size >= CONCURRENCY) return
      if (d.next > now || this.sending.has(id)) continue
      if (now > d.until) {
        this.log?.warn({ account: d.account, attempts: d.attempt - 1 }, 'webhook given up')
        await this.records.delete('webhook', id)
        continue
      }
      const claim = `${CLAIMS}/${id.slice(OUTBOX.length + 1)}.${d.attempt}`
      const made = await this.records.create('webhook', claim, { at: now })
      if (made !== 'created') {
        const held = await this.records.get<{ at: number }>('webhook', claim)
        // Its sender died mid-send: the attempt counts as failed, and the next one is due now.
        if (held !== undefined && now - held.at > STALE_MS)
          await this.records.put('webhook', id, { ...d, attempt: d.attempt + 1, next: now })
        continue
      }
      this.sending.add(id)
      this.attempt(id, claim, d).finally(() => this.sending.delete(id))
    }
  }

  private async attempt(id: string, claim: string, d: Delivery): Promise<void> {
    const hook = await this.records.get<Hook>('webhook', `${d.account}/hook`)
    const account = await this.accounts.get(d.account)
    // Removed or changed since: the notification was for the webhook that was set then.
    const ok =
      hook !== undefined && hook.url === d.url && account !== undefined && !account.deleted
        ? await this.post(d, hook.secret)
        : 'dropped'
    if (ok === 'sent' || ok === 'dropped') {
      await this.records.delete('webhook', id)
    } else {
      const delay = Math.min(this.opts.retryMs * 2 ** (d.attempt - 1), this.opts.retryMs * 120)
      await this.records.put('webhook', id, {
        ...d,
        attempt: d.attempt + 1,
        next: Date.now() + delay,
      })
    }
    await this.records.delete('webhook', claim).catch(() => {})
  }

  /** One attempt: 'sent' on a 2xx, 'failed' otherwise (no answer in time, refused, 5xx ...). */
  private async post(d: Delivery, secret: string): Promise<'sent' | 'failed'> {
    const url = new URL(d.url)
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1')
    if (!this.opts.allowPrivate && net.isIP(host) !== 0 && privateAddress(host)) {
      this.log?.warn({ account: d.account }, 'webhook refused: a non-public address')
      return 'failed'
    }
    const t = Math.floor(Date.now() / 1000)
    const sig = createHmac('sha256', Buffer.from(secret, 'utf8'))
      .update(`${t}.${d.body}`)
      .digest('hex')
    const body = Buffer.from(d.body, 'utf8')
    return new Promise((resolve) => {
      let done = false
      const finish = (r: 'sent' | 'failed', why?: string) => {
        if (done) return
        done = true
        clearTimeout(timer)
        if (r === 'failed')
          this.log?.info({ account: d.account, attempt: d.attempt, why }, 'webhook attempt failed')
        resolve(r)
      }
      const req = (url.protocol === 'https:' ? https : http).request(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'content-length': body.length,
          'user-agent': 'Cairn-Webhook/1',
          'cairn-signature': `t=${t},v1=${sig}`,
        },
        lookup: publicLookup(this.opts.allowPrivate),
        agent: false,
      })
      const timer = setTimeout(() => {
        req.destroy()
        finish('failed', 'no answer in time')
      }, TIMEOUT_MS)
      req.on('error', (err) => finish('failed', (err as { code?: string }).code ?? 'error'))
      req.on('response', (res) => {
        const status = res.statusCode ?? 0
        let seen = 0
        res.on('data', (c: Buffer) => {
          seen += c.length
          if (seen > MAX_ANSWER) res.destroy()
        })
        res.on('error', () => {})
        res.resume()
        // A redirect is an answer, not a 2xx: not followed, retried like any other.
        finish(status >= 200 && status < 300 ? 'sent' : 'failed', `status ${status}`)
      })
      req.end(body)
    })
  }

  /** The account's webhook and its pending deliveries go (the account is deleted). */
  async forget(accountId: string): Promise<void> {
    await this.remove(accountId).catch(() => {})
  }
}
