// PATCH /v1/{namespace}/{key}: an increment, a new expiry or new metadata, applied in place as
// one write (a new version and a watch event) without the caller sending the value.
import type { HttpRequest } from '../http/uws.js'
import type { Plan } from '../services/plans.js'
import type { TxOp } from '../store/types.js'
import { parsePatchBody, patchOp } from '../wire/patch-body.js'
import { readRequestBody } from './body.js'
import type { Call } from './call.js'
import { writeTarget } from './entries.js'
import { withNamespace } from './checks.js'
import { bodyLimit } from '../wire/body-limits.js'
import type { Parsed } from './paths.js'

export function patchEntry(call: Call, req: HttpRequest, parsed: Parsed, plan: Plan): void {
  const target = writeTarget(call, req, parsed)
  if (target === undefined) return
  const { ns, key, ifMatch, ifNoneMatch } = target
  readRequestBody(call, req, bodyLimit(plan), (body) => {
    let op: TxOp & { op: 'patch' }
    try {
      op = patchOp(key, parsePatchBody(body, call.ctx.clock.now()))
    } catch (err) {
      return call.error(err)
    }
    withNamespace(call, ns, (info) =>
      call.applyLater(() =>
        call.ctx.data.patch(call.account!, info, op, ifMatch, ifNoneMatch, plan).then(
          (r) => {
            const v = String(r.version)
            call.send(
              r.created ? 201 : 200,
              r.value === undefined
                ? `{"version":"${v}"}`
                : `{"version":"${v}","value":${r.value}}`,
              `\r\nETag: "${v}"`,
            )
          },
          (err) => call.error(err),
        ),
      ),
    )
  })
}
