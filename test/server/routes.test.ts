// The /v1 route table and the OpenAPI document describe the same API: every route and
// method of one is in the other, with the same operationId.
import fs from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { ROUTES } from '../../server/v1/routes.js'
import { root } from '../helpers/server.js'

const doc = JSON.parse(fs.readFileSync(path.join(root, 'server/openapi.json'), 'utf8'))
const fromTable = new Map<string, string>()
for (const r of Object.values(ROUTES))
  for (const [method, op] of Object.entries(r.methods)) fromTable.set(`${method} ${r.path}`, op!.id)
const fromDoc = new Map<string, string>()
for (const [p, item] of Object.entries<Record<string, { operationId?: string }>>(doc.paths))
  for (const [method, op] of Object.entries(item))
    if (op?.operationId) fromDoc.set(`${method} ${p}`, op.operationId)

t.same([...fromTable].sort(), [...fromDoc].sort(), 'the same routes, methods and operation ids')
t.ok(fromTable.size >= 9, `every route is in the table (${fromTable.size})`)
