// POST /v1/namespaces, GET /v1/namespaces, DELETE /v1/namespaces/{name}.
import { ApiError, noSuchNamespace } from '../wire/errors.js'
import type { HttpRequest } from '../http/uws.js'
import { validNamespaceName } from '../services/namespaces.js'
import { readRequestBody, typeRefusal } from './body.js'
import type { Call } from './call.js'
import { parseJsonObject } from '../wire/json-body.js'
import type { Parsed } from './paths.js'

const BODY_LIMIT = 16 * 1024

export function listNamespaces(call: Call): void {
  const k = call.key!
  call.async()
  const account = call.account!
  call.ctx.namespaces
    .list(account)
    .then((rows) =>
      Promise.all(
        rows
          .filter((n) => k.allows(n.name))
          .map(async (n) => {
            const info = account.namespaces.get(n.name)
            // The oldest point still readable (the contract's "History and restore").
            const historyFrom =
              info === undefined ? new Date().toISOString() : await call.ctx.history.fromText(info)
            return { ...n, historyFrom }
          }),
      ),
    )
    .then(
      (namespaces) => call.send(200, JSON.stringify({ namespaces })),
      (err) => call.error(err),
    )
}

export function createNamespace(call: Call, req: HttpRequest): void {
  if (!call.key!.canWrite) return call.fail('forbidden', 'This API key may only read.')
  const refused = typeRefusal(req)
  if (refused !== undefined) return call.refuse(refused)
  readRequestBody(call, req, BODY_LIMIT, (body) => {
    let name: unknown
    try {
      name = parseJsonObject(body).name
      if (!validNamespaceName(name)) throw new ApiError('invalid_namespace')
    } catch (err) {
      return call.error(err)
    }
    call.ns = name
    if (!call.key!.allows(name))
      return call.fail('forbidden', `This API key may not use namespace "${name}".`)
    call.applyLater(() =>
      call.ctx.namespaces.create(call.account!, name).then(
        (row) => call.send(201, JSON.stringify({ name: row.name, createdAt: row.createdAt })),
        (err) => call.error(err),
      ),
    )
  })
}

export function deleteNamespace(call: Call, parsed: Parsed): void {
  const k = call.key!
  const name = parsed.ns
  if (!k.canWrite || !k.allows(name)) {
    return call.fail(
      'forbidden',
      k.canWrite ? `This API key may not use namespace "${name}".` : 'This API key may only read.',
    )
  }
  call.applyLater(() =>
    call.ctx.namespaces.drop(call.account!, name).then(
      (dropped) => {
        if (!dropped) return call.fail('namespace_not_found', noSuchNamespace(name))
        call.send(200, '{"deleted":true}')
      },
      (err) => call.error(err),
    ),
  )
}
