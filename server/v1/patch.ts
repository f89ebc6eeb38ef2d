// PATCH /v1/{namespace}/{key}: an increment, a new expiry or new metadata, applied in place as
// one write (a new version and a watch event) without the caller sending the value.
import type { HttpRequest } from '../http/uws.js'
import type { Plan } from '../services/plans.js'
import type { TxOp } from '../store/types.js'
import { ApiError } from '../wire/errors.js'
import { matches, parseTags, singleVersion } from '../wire/conditions.js'
import { parsePatchBody } from '../wire/patch-body.js'
import { acceptsJson, readRequestBody } from './body.js'
import type { Call } from './call.js'
import { canUse, keyOf, missingNow, withNamespace } from './entries.js'
import { bodyLimit } from '../wire/body-limits.js'
import type { Parsed } from './paths.js'

export function patchEntry(call: Call, req: HttpRequest, parsed: Parsed, plan: Plan): void {
  const ns = parsed.ns
  if (!canUse(call, ns, true)) return
  const key = keyOf(call, parsed)
  if (key === undefined) return
  if (!acceptsJson(call, req)) return
  const ifMatch = parseTags(req.getHeader('if-match'))
  const ifNoneMatch = parseTags(req.getHeader('if-none-match'))
  if (missingNow(call, ns)) return
  readRequestBody(call, req, bodyLimit(plan), (body) => {
    let op: TxOp & { op: 'patch' }
    try {
      const p = parsePatchBody(body, Date.now())
      op = { op: 'patch', key }
      if (p.increment !== undefined) op.by = p.increment
      if (p.ttl !== undefined) op.ttlMs = p.ttl * 1000
      if (p.expiresAt !== undefined) op.expiresAt = p.expiresAt * 1000
      if (p.persist) op.persist = true
      if (p.metadata !== undefined) op.metadata = p.metadata
    } catch (err) {
      return call.error(err)
    }
    withNamespace(call, ns, (info) =>
      call.applyLater(async () => {
        try {
          const ops: TxOp[] = [op]
          if (ifMatch !== undefined) {
            // One version goes to the store as is; '*' or a list is settled against the key's
            // current version, which the store then checks again at the moment of the write.
            const one = singleVersion(ifMatch)
            if (one !== undefined) op.ifVersion = one
            else {
              const v = (await call.ctx.data.get(info, key))?.version
              op.ifVersion = v !== undefined && matches(ifMatch, v) ? v : -1
            }
          }
          if (ifNoneMatch !== undefined) {
            // HTTP's, as on PUT and DELETE: refused while the key (or that version) is there.
            // A check of the state seen goes ahead of the change, so nothing slips between.
            const v = (await call.ctx.data.get(info, key))?.version
            if (matches(ifNoneMatch, v)) throw new ApiError('precondition_failed')
            ops.unshift({ op: 'check', key, version: v ?? null })
          }
          const done = await call.ctx.data.transact(call.account!, info, ops)
          const r = done.results[ops.length - 1] as {
            version: number
            value?: bigint
            created?: boolean
          }
          const v = String(r.version)
          call.send(
            r.created ? 201 : 200,
            r.value === undefined ? `{"version":"${v}"}` : `{"version":"${v}","value":${r.value}}`,
            `\r\nETag: "${v}"`,
          )
        } catch (err) {
          // One op: the error needs no index.
          if (err && typeof err === 'object') delete (err as { index?: number }).index
          call.error(err)
        }
      }),
    )
  })
}
