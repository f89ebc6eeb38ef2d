// POST /v1/{namespace}?import=1&mode=merge|replace (with a prefix or a range): NDJSON in the
// export's format. The body goes through services/import-spool.ts as it arrives (checked line
// by line to a temporary file; a bad line is answered at once, naming it, and nothing is
// applied), then is applied whole; the dashboard's upload goes the same way.
import type { HttpRequest } from '../http/uws.js'
import { ImportSpool, MAX_IMPORT_BYTES } from '../services/import-spool.js'
import type { Plan } from '../services/plans.js'
import { OP } from '../services/usage.js'
import { secondsToMidnight } from '../services/limits.js'
import { bodyLimit } from '../wire/body-limits.js'
import { ERRORS, lineErrorText } from '../wire/errors.js'
import { type KeyRange, rangeFault } from '../wire/range.js'
import { closeRequested } from './body.js'
import type { Call } from './call.js'
import { missingRefusal, useRefusal } from './checks.js'
import type { NamespaceInfo } from '../services/accounts.js'
import type { Parsed } from './paths.js'
import { runTransaction } from './transaction.js'
import { parseQuery } from '../wire/query.js'

const NDJSON = /^application\/(x-ndjson|jsonl|x-jsonlines|json)\s*(;|$)/i

/** POST /v1/{namespace}: an import with import=1, else a transaction (transaction.ts). */
export function postNamespace(call: Call, req: HttpRequest, parsed: Parsed, plan: Plan): void {
  const raw = req.getQuery()
  if (raw === undefined || raw === '') return runTransaction(call, req, parsed, plan)
  const q = parseQuery(raw)
  if (!(q instanceof URLSearchParams)) return call.fail('invalid_request', q.message)
  if (q.get('import') !== '1') return runTransaction(call, req, parsed, plan)
  importNamespace(call, req, parsed, plan, q)
}

function importNamespace(
  call: Call,
  req: HttpRequest,
  parsed: Parsed,
  plan: Plan,
  q: URLSearchParams,
): void {
  call.op = OP.import
  const ns = parsed.ns
  const unusable = useRefusal(call.key!, ns, true)
  if (unusable !== undefined) return call.refuse(unusable)
  const type = req.getHeader('content-type')
  if (type !== '' && !NDJSON.test(type))
    return call.fail(
      'unsupported_media_type',
      `Content-Type ${JSON.stringify(type.slice(0, 100))} is not accepted: send an import with Content-Type: application/x-ndjson.`,
    )
  const mode = q.get('mode') ?? 'merge'
  if (mode !== 'merge' && mode !== 'replace')
    return call.fail('invalid_request', 'mode is merge (the default) or replace.')
  const range: KeyRange = {
    prefix: q.get('prefix') ?? '',
    start: q.get('start') ?? '',
    end: q.get('end') ?? '',
  }
  const fault = rangeFault(range)
  if (fault !== undefined) return call.fail('invalid_range', fault)
  const missing = missingRefusal(call, ns)
  if (missing !== undefined) return call.refuse(missing)
  const closing = closeRequested(req.getHeader('connection'))
  const declared = req.getHeader('content-length')
  if (declared !== '' && Number(declared) > MAX_IMPORT_BYTES)
    return call.fail('import_too_large', undefined, '', true)

  let spool: ImportSpool
  try {
    spool = new ImportSpool({
      maxValueBytes: plan.maxValueBytes,
      lineMax: bodyLimit(plan),
      metadataBytes: (m) => call.ctx.data.metadataBytes(m),
    })
  } catch (err) {
    return call.error(err)
  }
  const ctx = call.ctx
  const account = call.account!
  const drop = () => spool.drop()
  const refused = (r: { code: keyof typeof ERRORS; message?: string; line?: number }) => {
    if (r.code === 'import_too_large') return call.fail('import_too_large', undefined, '', true)
    call.send(ERRORS[r.code].status, lineErrorText(r.code, r.message!, r.line!), '', closing)
  }
  const take = (chunk: Buffer) => {
    if (spool.refused !== undefined) return
    const r = spool.take(chunk)
    if (r !== undefined) refused(r)
  }
  const end = () => {
    if (spool.refused !== undefined || call.done) return drop()
    const r = spool.end()
    if (r !== undefined) return refused(r)
    const entries = spool.entries
    call.bytesIn = spool.size
    const n = Math.max(1, Math.ceil(entries / 1000))
    call.count = n
    const now = ctx.clock.now()
    if (plan.requestsPerDay !== null) {
      const used = ctx.usage.today(account.id, now).requests
      if (used + n > plan.requestsPerDay) {
        call.count = 1
        drop()
        return call.fail(
          'quota_exceeded',
          `This import's ${entries} entries count as ${n} requests, past the ${plan.id} plan's ${plan.requestsPerDay} per UTC day.`,
          `\r\nRetry-After: ${secondsToMidnight(now)}`,
        )
      }
    }
    // As withNamespace, with the file let go when the namespace turns out to be missing (a
    // shared store asked only now) or the lookup fails.
    const found = ctx.accounts.namespace(account, ns)
    const go = (info: NamespaceInfo | undefined) => {
      if (info !== undefined) return apply(info)
      drop()
      call.fail('namespace_not_found', `There is no namespace "${ns}".`)
    }
    if (!(found instanceof Promise)) return go(found)
    call.async()
    found.then(go, (err) => {
      drop()
      call.error(err)
    })
  }
  const apply = (info: NamespaceInfo) =>
    call.applyLater(() => {
      spool.apply(ctx.data, account, info, mode, range).then(
        (r) =>
          call.send(
            200,
            `{"imported":${r.imported},"deleted":${r.deleted},"version":"${r.version}"}`,
          ),
        (err) => call.error(err),
      )
    })
  readStream(call, take, end)
}

/**
 * Hands the body's chunks to `take` as they arrive and calls `end` after the last; where the
 * request was deferred (deferred.ts), what it kept comes first.
 */
function readStream(call: Call, take: (chunk: Buffer) => void, end: () => void): void {
  call.unreadBody = false
  call.async()
  const stash = call.stash
  if (stash !== undefined) {
    for (const c of stash.chunks) take(c)
    stash.chunks.length = 0
    if (stash.done) return end()
    // A kept line already refused was answered: the response may not be touched again (uWS
    // ends the process), and the stash's own reader drops the rest of the body as it comes.
    if (call.done) return end()
  }
  call.onAbort = end
  call.res.onData((chunk, isLast) => {
    if (call.done) return
    // uWebSockets.js reuses the chunk's memory once this callback returns.
    take(Buffer.from(chunk))
    if (isLast) end()
  })
  call.resumeReading()
}
