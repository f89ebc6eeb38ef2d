// GET /v1/{namespace}?count=1 and ?export=1 (with a prefix or a range, and `at=` a point). What
// it reads is services/export-read.ts (the range at one version); the stream itself is
// services/exports.ts (backpressure, counting), the dashboard's download too; this opens it on
// the API key's call.
import { responseOut } from '../http/stream-out.js'
import { exportRead } from '../services/export-read.js'
import { exportFileName, streamExport } from '../services/exports.js'
import { OP } from '../services/usage.js'
import type { HistoryPoint } from '../store/types.js'
import type { KeyRange } from '../wire/range.js'
import type { Call } from './call.js'
import { withNamespace } from './checks.js'
import type { Parsed } from './paths.js'

export function countRange(call: Call, parsed: Parsed, range: KeyRange): void {
  withNamespace(call, parsed.ns, (info) => {
    call.async()
    call.ctx.data.countRange(info, range).then(
      (c) => call.send(200, `{"count":${c.count},"bytes":${c.bytes},"version":"${c.version}"}`),
      (err) => call.error(err),
    )
  })
}

export function exportRange(
  call: Call,
  parsed: Parsed,
  range: KeyRange,
  point: HistoryPoint | undefined,
): void {
  call.op = OP.export
  if (call.headOnly)
    return call.fail(
      'method_not_allowed',
      'An export streams its body: send GET.',
      '\r\nAllow: GET',
    )
  const ctx = call.ctx
  const account = call.account!
  const plan = ctx.plans.get(account.rec.plan)
  withNamespace(call, parsed.ns, (info) => {
    call.async()
    exportRead(ctx, info, range, point).then(
      (snap) => {
        if (call.aborted || call.done) return snap.close()
        // The request is counted as the stream opens (its first 1,000 entries), the rest as
        // they go.
        ctx.usage.record(account.id, OP.export, 200, call.bytesIn, 0, ctx.clock.now())
        call.op = -1
        call.openStream(
          'application/x-ndjson',
          `\r\nCache-Control: no-store\r\nContent-Disposition: attachment; filename="${exportFileName(parsed.ns)}"`,
        )
        let sent = 0
        const out = responseOut(call.res, {
          closed: () => call.aborted || call.done,
          end: () => call.endStream(sent),
        })
        const s = streamExport(
          ctx,
          snap,
          { ns: parsed.ns, accountId: account.id, perDay: plan.requestsPerDay },
          out,
          (bytes) => {
            sent = bytes
          },
        )
        call.onAbort = () => s.abort()
      },
      (err) => call.error(err),
    )
  })
}
