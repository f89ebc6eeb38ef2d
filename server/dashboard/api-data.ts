// The data browser: list keys, read, write and delete values. Everything goes through the
// same pieces as /v1 (key rules, the strict body scanner, ctx.data's quota and conditional
// writes, cursors), so the browser can store nothing the API would refuse, and values keep
// their exact text: big integers and member order survive an edit.
import type { NamespaceInfo } from '../services/accounts.js'
import type { Context } from '../context.js'
import { ApiError } from '../wire/errors.js'
import { apiErrorOf } from '../services/store-errors.js'
import { jsonContentType } from '../wire/content-type.js'
import { parseTags } from '../wire/conditions.js'
import { encodeCursor, walkOf } from '../wire/cursor.js'
import { parsePutBody } from '../wire/json-body.js'
import { expirySeconds } from '../wire/expiry.js'
import { parsePatchBody, patchOp } from '../wire/patch-body.js'
import type { Caller } from './guard.js'
import { keyParam } from './key-param.js'
import { type Reply, type Req, jsonReply, readJson } from '../http/pipeline.js'

const PAGE = 50
const LIMIT = /^[1-9][0-9]{0,3}$/

/** Milliseconds since the epoch as the API's unix seconds (null: no expiry). */
const unixSeconds = (ms: number | undefined) => (ms === undefined ? null : expirySeconds(ms))

/** Storage's refusals (a namespace dropped meanwhile, a condition) as the API's errors. */
function gone(err: unknown): never {
  throw apiErrorOf(err)
}

export class DataApi {
  constructor(private ctx: Context) {}

  private async ns(req: Req, c: Caller): Promise<NamespaceInfo> {
    return this.ctx.data.namespace(c.account, req.params[0]!)
  }

  async listKeys(req: Req, c: Caller): Promise<Reply> {
    const info = await this.ns(req, c)
    const limitText = req.query.get('limit')
    const limit = limitText === null ? PAGE : LIMIT.test(limitText) ? Number(limitText) : 0
    if (limit < 1 || limit > 1000) throw new ApiError('invalid_limit')
    const walk = walkOf(req.query.get('prefix'), req.query.get('cursor') || null)
    if (walk === undefined) throw new ApiError('invalid_cursor')
    const { prefix, after } = walk
    // Entries carry each key's version and expiry; metadata is the lightest include there
    // is (values stay unread), and the list shows no metadata, so only its presence is sent.
    const page = await this.ctx.data
      .list(info, { prefix, after, limit, include: { metadata: true } })
      .catch(gone)
    return jsonReply(200, {
      entries: (page.entries ?? []).map((e) => ({
        key: e.key,
        version: String(e.version),
        expiresAt: unixSeconds(e.expiresAt),
        hasMetadata: e.metadata != null,
      })),
      cursor: page.next === undefined ? null : encodeCursor(page.next, prefix),
      version: String(page.version),
    })
  }

  /** The value as its JSON text in a string, so the page never rounds a number. */
  async getValue(req: Req, c: Caller): Promise<Reply> {
    const info = await this.ns(req, c)
    const key = keyParam(req)
    const got = await this.ctx.data.get(info, key).catch(gone)
    if (!got) throw new ApiError('key_not_found')
    return jsonReply(200, {
      key,
      json: Buffer.from(got.value as Uint8Array).toString('utf8'),
      version: String(got.version),
      expiresAt: unixSeconds(got.expiresAt),
      metadata: got.metadata === undefined ? null : got.metadata.toString('utf8'),
    })
  }

  /**
   * The body is a /v1 PUT body, metadata included (a PUT replaces it: none when absent);
   * If-Match and If-None-Match work as they do there.
   */
  async putValue(req: Req, c: Caller): Promise<Reply> {
    const info = await this.ns(req, c)
    const key = keyParam(req)
    if (!jsonContentType(req.headers['content-type']!)) throw new ApiError('unsupported_media_type')
    const plan = this.ctx.plans.get(c.account.rec.plan)
    const body = parsePutBody(req.body, plan.maxValueBytes, this.ctx.clock.now())
    const done = await this.ctx.data.put(c.account, info, key, body.value, {
      ttl: body.ttl,
      expiresAt: body.expiresAt,
      metadata: body.metadata,
      ifMatch: parseTags(req.headers['if-match']!),
      ifNoneMatch: parseTags(req.headers['if-none-match']!),
    })
    return jsonReply(done.created ? 201 : 200, {
      created: done.created,
      version: String(done.version),
    })
  }

  async deleteValue(req: Req, c: Caller): Promise<Reply> {
    const info = await this.ns(req, c)
    const key = keyParam(req)
    if (!(await this.ctx.data.delete(info, key, parseTags(req.headers['if-match']!))))
      throw new ApiError('key_not_found')
    return jsonReply(200, { deleted: true })
  }

  /**
   * The body is a /v1 PATCH body (the browser sends metadata and expiry changes, leaving the
   * value as it is); If-Match works as it does there.
   */
  async patchValue(req: Req, c: Caller): Promise<Reply> {
    const info = await this.ns(req, c)
    const key = keyParam(req)
    if (!jsonContentType(req.headers['content-type']!)) throw new ApiError('unsupported_media_type')
    const op = patchOp(key, parsePatchBody(req.body, this.ctx.clock.now()))
    const ifMatch = parseTags(req.headers['if-match']!)
    const r = await this.ctx.data.patch(c.account, info, op, ifMatch, undefined)
    return jsonReply(r.created ? 201 : 200, {
      version: String(r.version),
      ...(r.value === undefined ? {} : { value: r.value.toString() }),
    })
  }

  /**
   * Deletes every key beginning with `?prefix=` (never all of them: the prefix may not be
   * empty). The body's `confirm` must repeat the prefix, so a slip cannot empty a namespace.
   */
  async deletePrefix(req: Req, c: Caller): Promise<Reply> {
    const info = await this.ns(req, c)
    const prefix = req.query.get('prefix') ?? ''
    if (prefix === '') throw new ApiError('invalid_prefix')
    if (readJson(req).confirm !== prefix)
      throw new ApiError(400, 'invalid_request', 'Type the prefix again to confirm.')
    return jsonReply(200, { deleted: await this.ctx.data.deletePrefix(info, prefix).catch(gone) })
  }
}
