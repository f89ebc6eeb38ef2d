// A key's history and restores from the dashboard (the contract's "History and restore"):
// the versions come from services/history.ts as /v1's ?history=1 does, and both restores are
// services/restore.ts: "Restore this version" restores the one key to that version's point
// (a deleted version restores to a delete, as a restore of a key created since would), and
// "Restore to a point in time" restores a prefix, its Preview being the same walk as a dry
// run, which counts the keys the restore would write and writes none.
import type { Context } from '../context.js'
import { type Reply, type Req, jsonReply, readJson } from '../http/pipeline.js'
import { type RestoreScope, restore } from '../services/restore.js'
import { OP } from '../services/usage.js'
import type { HistoryPoint } from '../store/types.js'
import { ApiError } from '../wire/errors.js'
import { expirySeconds } from '../wire/expiry.js'
import { POINT_HELP, parsePoint } from '../wire/point.js'
import type { Caller } from './guard.js'
import { keyParam } from './key-param.js'

/** Versions listed per page. */
const PAGE = 50
/** Keys a restore writes per request it counts as (as /v1 counts it). */
const KEYS_PER_REQUEST = 1000

/** The scope of exactly one key: from the key up to the next key there can be. */
const oneKey = (key: string): RestoreScope => ({ prefix: '', start: key, end: `${key}\u0000` })

export class HistoryApi {
  constructor(private ctx: Context) {}

  /** GET .../history?key=&before=: the key's versions, newest first, values as JSON text. */
  async versions(req: Req, c: Caller): Promise<Reply> {
    const info = await this.ctx.data.namespace(c.account, req.params[0]!)
    const key = keyParam(req)
    const beforeText = req.query.get('before')
    if (beforeText !== null && !/^[0-9]{1,16}$/.test(beforeText))
      throw new ApiError('invalid_cursor')
    const before = beforeText === null ? undefined : Number(beforeText)
    const got = await this.ctx.history.versions(info, key, { limit: PAGE + 1, before })
    const page = got.slice(0, PAGE)
    return jsonReply(200, {
      key,
      versions: page.map((v) => ({
        version: String(v.version),
        at: new Date(v.at).toISOString(),
        deleted: v.deleted === true,
        json: v.value === undefined ? null : v.value.toString('utf8'),
        expiresAt: v.expiresAt === undefined ? null : expirySeconds(v.expiresAt),
        metadata: v.metadata === undefined ? null : v.metadata.toString('utf8'),
      })),
      before: got.length > PAGE ? String(page[PAGE - 1]!.version) : null,
    })
  }

  private async run(
    req: Req,
    c: Caller,
    point: HistoryPoint,
    scope: RestoreScope,
    dryRun: boolean,
  ) {
    const ctx = this.ctx
    const info = await ctx.data.namespace(c.account, req.params[0]!)
    const r = await restore(ctx, c.account, info, point, scope, { dryRun })
    if (!dryRun)
      ctx.usage.record(
        c.account.id,
        OP.restore,
        200,
        req.body.length,
        0,
        this.ctx.clock.now(),
        Math.max(1, Math.ceil(r.restored / KEYS_PER_REQUEST)),
        info.name,
      )
    return r
  }

  /** POST .../restore-version?key=, body {"version"}: the key as it was at that version. */
  async restoreVersion(req: Req, c: Caller): Promise<Reply> {
    const body = readJson(req)
    const version = typeof body.version === 'string' ? parsePoint(body.version) : undefined
    if (version === undefined || !('version' in version))
      throw new ApiError('invalid_point', 'Give the version to restore, as a string of digits.')
    const r = await this.run(req, c, version, oneKey(keyParam(req)), false)
    return jsonReply(200, { restored: r.restored, version: String(r.version) })
  }

  /**
   * POST .../restore, body {"at", "prefix"?, "preview"?}: with preview, how many keys the
   * restore would write (`changes`), nothing written; else the restore.
   */
  async restoreTo(req: Req, c: Caller): Promise<Reply> {
    const body = readJson(req)
    const point = typeof body.at === 'string' ? parsePoint(body.at) : undefined
    if (point === undefined) throw new ApiError('invalid_point', POINT_HELP)
    if (body.prefix !== undefined && typeof body.prefix !== 'string')
      throw new ApiError('invalid_request', '"prefix" is a string.')
    const scope = { prefix: (body.prefix as string | undefined) ?? '' }
    const preview = body.preview === true
    const r = await this.run(req, c, point, scope, preview)
    return jsonReply(
      200,
      preview
        ? { changes: r.restored, version: String(r.version) }
        : { restored: r.restored, version: String(r.version) },
    )
  }
}
