// A namespace's export and import from the dashboard (the contract's "Export and import"):
// the download is /v1's export, streamed by the same services/exports.ts from the same
// snapshot; the upload goes through the same services/import-spool.ts, checked line by line
// before anything applies, then applied by services/imports.ts. Both count as /v1's do
// (`export` and `import`, one request per started 1,000 entries), as the live view counts
// its watch.
import type { Context } from '../context.js'
import type { Reply, Req } from '../http/pipeline.js'
import { jsonReply } from '../http/pipeline.js'
import { exportFileName, streamExport } from '../services/exports.js'
import { type ImportRefusal, ImportSpool, MAX_IMPORT_BYTES } from '../services/import-spool.js'
import { secondsToMidnight } from '../services/limits.js'
import { ServiceError } from '../services/service-error.js'
import { OP } from '../services/usage.js'
import { bodyLimit } from '../wire/body-limits.js'
import { ApiError, ERRORS } from '../wire/errors.js'
import { type Caller, checkSameOrigin } from './guard.js'

/**
 * The largest file the dashboard uploads: its body is read whole before it is checked (the
 * dashboard's pipeline reads bodies whole), so less than /v1's 1 GiB, which streams to disk.
 * Larger files go through `cairn-kv import` or /v1.
 */
export const DASHBOARD_IMPORT_BYTES = Math.min(MAX_IMPORT_BYTES, 64 * 1024 * 1024)

const EMPTY_RANGE = { prefix: '', start: '', end: '' }

/** A refused import as /v1 answers it: a line's fault names its line. */
function refusal(r: ImportRefusal): Reply {
  const code = r.code
  const message =
    r.message ??
    `An import from the dashboard is at most ${DASHBOARD_IMPORT_BYTES} bytes; send a larger one with cairn-kv import.`
  const error: Record<string, unknown> = { code, message }
  if (r.line !== undefined) error.line = r.line
  return jsonReply(ERRORS[code].status, { error })
}

export class TransferApi {
  constructor(private ctx: Context) {}

  /** GET .../export: the NDJSON as a download (Content-Disposition: attachment). */
  async exportNamespace(req: Req, c: Caller): Promise<Reply> {
    // The export counts against the quota: only this site's own pages may start one (a
    // link on another site would carry the cookie, SameSite=Lax, and spend the quota).
    checkSameOrigin(req)
    if (req.method === 'HEAD')
      throw new ServiceError(405, 'method_not_allowed', 'An export streams its body: send GET.', {
        Allow: 'GET',
      })
    const ctx = this.ctx
    const account = c.account
    const info = await ctx.data.namespace(account, req.params[0]!)
    const snap = await ctx.data.snapshot(info, EMPTY_RANGE)
    // The first request is counted as the stream opens, the rest as it goes (exports.ts).
    ctx.usage.record(account.id, OP.export, 200, 0, 0, Date.now(), 1, info.name)
    const plan = ctx.plans.get(account.rec.plan)
    return {
      status: 200,
      headers: {
        'Content-Type': 'application/x-ndjson',
        'Cache-Control': 'no-store',
        'Content-Disposition': `attachment; filename="${exportFileName(info.name)}"`,
      },
      stream: (out) => {
        const s = streamExport(
          ctx,
          snap,
          { ns: info.name, accountId: account.id, perDay: plan.requestsPerDay },
          out,
          () => {},
        )
        out.onClose = () => s.abort()
        if (out.closed) s.abort()
      },
    }
  }

  /** The body limit of an upload, from its head: refused at once when it says it is larger. */
  importLimit(req: Req): number | Reply {
    const declared = req.headers['content-length']
    if (declared && Number(declared) > DASHBOARD_IMPORT_BYTES)
      return refusal({ code: 'import_too_large' })
    return DASHBOARD_IMPORT_BYTES
  }

  /** POST .../import?mode=merge|replace, the NDJSON file as the body. */
  async importNamespace(req: Req, c: Caller): Promise<Reply> {
    const ctx = this.ctx
    const account = c.account
    const mode = req.query.get('mode') ?? 'merge'
    if (mode !== 'merge' && mode !== 'replace')
      throw new ApiError('invalid_request', 'mode is merge (the default) or replace.')
    const info = await ctx.data.namespace(account, req.params[0]!)
    const plan = ctx.plans.get(account.rec.plan)
    const spool = new ImportSpool({
      maxValueBytes: plan.maxValueBytes,
      lineMax: bodyLimit(plan),
      metadataBytes: (m) => ctx.data.metadataBytes(m),
    })
    try {
      const refused = spool.take(req.body) ?? spool.end()
      if (refused !== undefined) return refusal(refused)
      const n = Math.max(1, Math.ceil(spool.entries / 1000))
      const now = Date.now()
      const used = ctx.usage.today(account.id, now).requests
      if (plan.requestsPerDay !== null && used + n > plan.requestsPerDay)
        throw new ApiError(
          'quota_exceeded',
          `This import's ${spool.entries} entries count as ${n} requests, past the ${plan.id} plan's ${plan.requestsPerDay} per UTC day.`,
          { 'Retry-After': String(secondsToMidnight(now)) },
        )
      const r = await spool.apply(ctx.data, account, info, mode, EMPTY_RANGE)
      ctx.usage.record(account.id, OP.import, 200, req.body.length, 0, Date.now(), n, info.name)
      return jsonReply(200, {
        imported: r.imported,
        deleted: r.deleted,
        version: String(r.version),
      })
    } finally {
      // Whatever happened, the temporary file goes (it is gone already once applied).
      spool.drop()
    }
  }
}
