// The Account page's notifications: the account's webhook (set, shown without its secret,
// tested, removed) and the usage alerts that hold now, for the banner on every page.
import { LRUCache } from 'lru-cache'
import type { Context } from '../context.js'
import { type Reply, type Req, jsonReply, readJson } from '../http/pipeline.js'
import { ApiError } from '../wire/errors.js'
import type { Caller } from './guard.js'

/** One test delivery per account per this long, per front end: a button cannot flood the outbox. */
const TEST_EVERY_MS = 10_000

export class NotificationsApi {
  private tested = new LRUCache<string, true>({ max: 100_000, ttl: TEST_EVERY_MS })

  constructor(private ctx: Context) {}

  async get(_req: Req, c: Caller): Promise<Reply> {
    return jsonReply(200, { webhook: await this.ctx.webhooks.get(c.account.id) })
  }

  /** Saves the URL with a new secret, shown this once. */
  async set(req: Req, c: Caller): Promise<Reply> {
    const saved = await this.ctx.webhooks.set(c.account.id, readJson(req).url)
    return jsonReply(200, { webhook: saved })
  }

  async remove(_req: Req, c: Caller): Promise<Reply> {
    return jsonReply(200, { removed: await this.ctx.webhooks.remove(c.account.id) })
  }

  async test(_req: Req, c: Caller): Promise<Reply> {
    const id = c.account.id
    if ((await this.ctx.webhooks.get(id)) === null)
      throw new ApiError(404, 'no_webhook', 'Save a webhook URL first.')
    if (this.tested.has(id))
      throw new ApiError(429, 'rate_limited', 'A test was sent a moment ago; wait a few seconds.', {
        'Retry-After': String(TEST_EVERY_MS / 1000),
      })
    const queued = await this.ctx.webhooks.notify(id, {
      type: 'webhook.test',
      account: id,
      at: new Date().toISOString(),
    })
    if (!queued) throw new ApiError(404, 'no_webhook', 'Save a webhook URL first.')
    this.tested.set(id, true)
    return jsonReply(202, { queued: true })
  }

  async alerts(_req: Req, c: Caller): Promise<Reply> {
    return jsonReply(200, { alerts: await this.ctx.alerts.active(c.account) })
  }
}
