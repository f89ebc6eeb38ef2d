// DELETE /v1/{namespace}?prefix=p: every key beginning with p, each deleted as a write of its
// own (its own version and watch event). Without a prefix nothing is deleted: a namespace is
// emptied by deleting it.
import type { HttpRequest } from '../http/uws.js'
import type { Call } from './call.js'
import { useRefusal, withNamespace } from './checks.js'
import type { Parsed } from './paths.js'
import { parseQuery } from '../wire/query.js'

export function deleteByPrefix(call: Call, req: HttpRequest, parsed: Parsed): void {
  const ns = parsed.ns
  const refused = useRefusal(call.key!, ns, true)
  if (refused !== undefined) return call.refuse(refused)
  const q = parseQuery(req.getQuery() ?? '')
  if (!(q instanceof URLSearchParams))
    return call.fail(q.name === 'prefix' ? 'invalid_prefix' : 'invalid_request', q.message)
  const prefix = q.get('prefix')
  if (prefix === null || prefix === '') return call.fail('invalid_prefix')
  withNamespace(call, ns, (info) =>
    call.applyLater(() =>
      call.ctx.data.deletePrefix(info, prefix).then(
        (n) => call.send(200, `{"deleted":${n}}`),
        (err) => call.error(err),
      ),
    ),
  )
}
