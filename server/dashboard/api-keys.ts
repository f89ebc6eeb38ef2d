// API keys: list, create, rotate, revoke. A new secret leaves the server once, in the reply.
// Names, permissions and scopes are checked by the accounts module, as for the CLI.
import type { Permission } from '../services/accounts.js'
import type { Context } from '../context.js'
import type { Caller } from './guard.js'
import { type Reply, type Req, jsonReply, readJson } from '../http/pipeline.js'

export class KeysApi {
  constructor(private ctx: Context) {}

  async list(_req: Req, c: Caller): Promise<Reply> {
    return jsonReply(200, { keys: await this.ctx.accounts.listKeys(c.account) })
  }

  async create(req: Req, c: Caller): Promise<Reply> {
    const body = readJson(req)
    const scope = body.namespaces
    const made = await this.ctx.accounts.createKey(c.account, {
      name: typeof body.name === 'string' ? body.name : '',
      permission: body.permission as Permission,
      // An empty list in the form means "every namespace", as null does.
      namespaces: Array.isArray(scope) && scope.length === 0 ? null : (scope as string[] | null),
    })
    return jsonReply(201, made)
  }

  async rotate(req: Req, c: Caller): Promise<Reply> {
    return jsonReply(200, await this.ctx.accounts.rotateKey(c.account, req.params[0]))
  }

  async revoke(req: Req, c: Caller): Promise<Reply> {
    return jsonReply(200, { revoked: await this.ctx.accounts.revokeKey(c.account, req.params[0]) })
  }
}
