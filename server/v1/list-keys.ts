// GET /v1/{namespace}?prefix=&limit=&cursor=: keys in UTF-8 byte order, a page at a time.
import type { HttpRequest } from '../http/uws.js'
import type { Call } from './call.js'
import { withNamespace } from './entries.js'
import { encodeCursor, walkOf } from '../wire/cursor.js'
import type { Parsed } from './paths.js'

const LIMIT = /^[1-9][0-9]{0,3}$/

export function listKeys(call: Call, req: HttpRequest, parsed: Parsed): void {
  const ns = parsed.ns
  const k = call.key!
  if (!k.allows(ns)) return call.fail('forbidden', `This API key may not use namespace "${ns}".`)
  const q = new URLSearchParams(req.getQuery() ?? '')

  const limitText = q.get('limit')
  let limit = 1000
  if (limitText !== null) {
    limit = LIMIT.test(limitText) ? Number(limitText) : 0
    if (limit < 1 || limit > 1000) return call.fail('invalid_limit')
  }
  const walk = walkOf(q.get('prefix'), q.get('cursor'))
  if (walk === undefined) return call.fail('invalid_cursor')
  const { prefix, after } = walk
  withNamespace(call, ns, (info) => {
    call.async()
    call.ctx.data.list(info, { prefix, after, limit }).then(
      (page) => {
        let body = `{"keys":${JSON.stringify(page.keys)}`
        if (page.next !== undefined) body += `,"cursor":"${encodeCursor(page.next, prefix)}"`
        call.send(200, `${body}}`)
      },
      (err) => call.error(err),
    )
  })
}
