// Namespaces: list with key counts and bytes, create, delete. The namespaces module holds
// the rules (names, the plan's count), the same ones /v1 applies.
import type { Context } from '../context.js'
import { ApiError, noSuchNamespace } from '../wire/errors.js'
import type { Caller } from './guard.js'
import { type Reply, type Req, jsonReply, readJson } from '../http/pipeline.js'

export class NamespacesApi {
  constructor(private ctx: Context) {}

  async list(_req: Req, c: Caller): Promise<Reply> {
    return jsonReply(200, { namespaces: await this.ctx.namespaces.list(c.account) })
  }

  async create(req: Req, c: Caller): Promise<Reply> {
    return jsonReply(201, await this.ctx.namespaces.create(c.account, readJson(req).name))
  }

  /** Deleting takes the name typed again, so a slip of the mouse cannot lose data. */
  async drop(req: Req, c: Caller): Promise<Reply> {
    const name = req.params[0]!
    if (readJson(req).confirm !== name)
      throw new ApiError(400, 'invalid_request', 'Type the namespace name to confirm.')
    if (!(await this.ctx.namespaces.drop(c.account, name)))
      throw new ApiError('namespace_not_found', noSuchNamespace(name))
    return jsonReply(200, { deleted: true })
  }
}
