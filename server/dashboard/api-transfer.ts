// A namespace's export and import from the dashboard (the contract's "Export and import"):
// the download is /v1's export, streamed by the same services/exports.ts from the same
// snapshot; the upload goes through the same services/import-spool.ts as it arrives (the
// pipeline hands its chunks to a BodySink, so a file of up to 1 GiB costs a line's memory),
// checked line by line before anything applies, then applied by services/imports.ts. Both count as /v1's do
// (`export` and `import`, one request per started 1,000 entries), as the live view counts
// its watch.
import type { Context } from '../context.js'
import type { BodySink, Reply, Req } from '../http/pipeline.js'
import { jsonReply } from '../http/pipeline.js'
import { exportFileName, streamExport } from '../services/exports.js'
import { type ImportRefusal, ImportSpool, MAX_IMPORT_BYTES } from '../services/import-spool.js'
import { secondsToMidnight } from '../services/limits.js'
import { OP } from '../services/usage.js'
import { bodyLimit } from '../wire/body-limits.js'
import { ApiError, ERRORS } from '../wire/errors.js'
import { type Caller, checkSameOrigin } from './guard.js'

const EMPTY_RANGE = { prefix: '', start: '', end: '' }
const MODES = new Set(['merge', 'replace'])

/** An upload's sink: the spool its chunks go to. */
interface ImportSink extends BodySink {
  spool: ImportSpool
}

/** A refused import as /v1 answers it: a line's fault names its line. */
function refusal(r: ImportRefusal): Reply {
  const code = r.code
  const message = r.message ?? `An import is at most ${MAX_IMPORT_BYTES} bytes.`
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
      throw new ApiError(405, 'method_not_allowed', 'An export streams its body: send GET.', {
        Allow: 'GET',
      })
    const ctx = this.ctx
    const account = c.account
    const info = await ctx.data.namespace(account, req.params[0]!)
    const snap = await ctx.data.snapshot(info, EMPTY_RANGE)
    // The first request is counted as the stream opens, the rest as it goes (exports.ts).
    ctx.usage.record(account.id, OP.export, 200, 0, 0, ctx.clock.now(), 1, info.name)
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

  /**
   * Where an upload goes as it arrives, for a signed-in caller whose request is checked
   * (session, origin, CSRF) from its head: nothing of a refused one reaches the disk.
   */
  importSink(req: Req, c: Caller): ImportSink | Reply {
    if (!MODES.has(req.query.get('mode') ?? 'merge'))
      throw new ApiError('invalid_request', 'mode is merge (the default) or replace.')
    const declared = req.headers['content-length']
    if (declared && Number(declared) > MAX_IMPORT_BYTES)
      return refusal({ code: 'import_too_large' })
    const plan = this.ctx.plans.get(c.account.rec.plan)
    const spool = new ImportSpool({
      maxValueBytes: plan.maxValueBytes,
      lineMax: bodyLimit(plan),
      metadataBytes: (m) => this.ctx.data.metadataBytes(m),
    })
    return {
      spool,
      max: MAX_IMPORT_BYTES,
      take: (chunk) => {
        const r = spool.take(chunk)
        return r === undefined ? undefined : refusal(r)
      },
      drop: () => spool.drop(),
    }
  }

  /** POST .../import?mode=merge|replace, the NDJSON file as the body (in req.sink). */
  async importNamespace(req: Req, c: Caller): Promise<Reply> {
    const ctx = this.ctx
    const account = c.account
    const spool = (req.sink as ImportSink).spool
    try {
      const mode = req.query.get('mode') === 'replace' ? 'replace' : 'merge'
      const info = await ctx.data.namespace(account, req.params[0]!)
      const plan = ctx.plans.get(account.rec.plan)
      const refused = spool.end()
      if (refused !== undefined) return refusal(refused)
      const n = Math.max(1, Math.ceil(spool.entries / 1000))
      const now = ctx.clock.now()
      const used = ctx.usage.today(account.id, now).requests
      if (plan.requestsPerDay !== null && used + n > plan.requestsPerDay)
        throw new ApiError(
          'quota_exceeded',
          `This import's ${spool.entries} entries count as ${n} requests, past the ${plan.id} plan's ${plan.requestsPerDay} per UTC day.`,
          { 'Retry-After': String(secondsToMidnight(now)) },
        )
      const r = await spool.apply(ctx.data, account, info, mode, EMPTY_RANGE)
      ctx.usage.record(account.id, OP.import, 200, spool.size, 0, ctx.clock.now(), n, info.name)
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
