// Records on Redis Cluster: `c:{<group>}:<kind>:<id>`, with the group (the id's part before
// its first `/`) as the hash tag, so an account's own records (the account, its keys, its
// namespaces, its sessions, its usage) share one slot and change atomically together; an
// index per group and kind lists them in id order. Accounts are also listed by one global
// index, `c:{:accounts}` (docs/redis.md, "Records").
import type { Commands } from './commands.js'
import { storeError } from './errors.js'
import type { RecordKind, RecordOp, Records } from '../types.js'

const groupOf = (id: string) => {
  const slash = id.indexOf('/')
  return slash < 0 ? id : id.slice(0, slash)
}
const recordKey = (kind: RecordKind, id: string) => `c:{${groupOf(id)}}:${kind}:${id}`
const indexKey = (kind: RecordKind, group: string) => `c:{${group}}:${kind}s`
const ALL_ACCOUNTS = 'c:{:accounts}'

function checkId(id: string): void {
  if (id === '' || /[{}]/.test(groupOf(id)))
    throw Object.assign(new Error(`record id "${id}" may not hold { or } in its group`), {
      code: 'INVALID_ARGUMENT',
    })
}

export class ClusterRecords implements Records {
  constructor(private cmd: Commands) {}

  async get<T>(kind: RecordKind, id: string): Promise<T | undefined> {
    checkId(id)
    const c = this.cmd.client
    try {
      if (kind === 'usage') {
        const h = await c.hgetall(recordKey(kind, id))
        if (Object.keys(h).length === 0) return undefined
        return Object.fromEntries(Object.entries(h).map(([f, v]) => [f, Number(v)])) as T
      }
      const text = await c.get(recordKey(kind, id))
      return text === null ? undefined : (JSON.parse(text) as T)
    } catch (err) {
      throw storeError(err)
    }
  }

  async put(kind: RecordKind, id: string, value: unknown, o?: { expiresAt?: number }) {
    checkId(id)
    await this.cmd.write('cairnRecPut', [
      recordKey(kind, id),
      indexKey(kind, groupOf(id)),
      id,
      JSON.stringify(value),
      o?.expiresAt === undefined ? '' : String(Math.floor(o.expiresAt)),
    ])
    if (kind === 'account') await this.listed([id], [])
  }

  async create(kind: RecordKind, id: string, value: unknown, o?: { maxInGroup?: number }) {
    checkId(id)
    const made = await this.cmd.write('cairnRecCreate', [
      recordKey(kind, id),
      indexKey(kind, groupOf(id)),
      id,
      JSON.stringify(value),
      o?.maxInGroup === undefined ? '' : String(o.maxInGroup),
    ])
    return made as 'created' | 'exists' | 'full'
  }

  async delete(kind: RecordKind, id: string): Promise<boolean> {
    checkId(id)
    const n = await this.cmd.write('cairnRecDelete', [
      recordKey(kind, id),
      indexKey(kind, groupOf(id)),
      id,
    ])
    if (kind === 'account') await this.listed([], [id])
    return n === 1
  }

  async list<T>(kind: RecordKind, prefix: string, after?: string, limit = 1000) {
    if (kind === 'account' && prefix === '') return this.listAccounts<T>(after, limit)
    const group = prefix.endsWith('/') ? prefix.slice(0, -1) : ''
    if (group === '' || group.includes('/'))
      throw Object.assign(new Error('records list by one group ("<group>/")'), {
        code: 'INVALID_ARGUMENT',
      })
    const flat: string[] = await this.cmd.read('cairnRecList', [
      indexKey(kind, group),
      `c:{${group}}:${kind}:`,
      prefix,
      after ?? '',
      limit,
    ])
    const items: [string, T][] = []
    for (let i = 0; i < flat.length; i += 2) items.push([flat[i]!, JSON.parse(flat[i + 1]!) as T])
    if (items.length <= limit) return { items }
    items.length = limit
    return { items, next: items[limit - 1]![0] }
  }

  /** Every account: ids from the global index, each record from its own slot. */
  private async listAccounts<T>(after: string | undefined, limit: number) {
    const ids = await this.cmd.client.zrangebylex(
      ALL_ACCOUNTS,
      after ? `(${after}` : '-',
      '+',
      'LIMIT',
      0,
      limit + 1,
    )
    const more = ids.length > limit
    if (more) ids.length = limit
    const items: [string, T][] = []
    for (const id of ids) {
      const rec = await this.get<T>('account', id)
      if (rec !== undefined) items.push([id, rec])
    }
    return more ? { items, next: ids[limit - 1] } : { items }
  }

  async batch(ops: RecordOp[]): Promise<void> {
    if (ops.length === 0) return
    const group = groupOf(ops[0]!.id)
    if (ops.some((op) => groupOf(op.id) !== group)) {
      // Several groups cannot change atomically: applied in order (the seam says so).
      for (const op of ops) {
        if ('delete' in op) await this.delete(op.kind, op.id)
        else await this.put(op.kind, op.id, op.value, { expiresAt: op.expiresAt })
      }
      return
    }
    const args: string[] = [recordKey(ops[0]!.kind, ops[0]!.id)]
    for (const op of ops) {
      checkId(op.id)
      const rec = recordKey(op.kind, op.id)
      const idx = indexKey(op.kind, group)
      if ('delete' in op) args.push('d', rec, idx, op.id)
      else
        args.push(
          'p',
          rec,
          idx,
          op.id,
          JSON.stringify(op.value),
          op.expiresAt === undefined ? '' : String(Math.floor(op.expiresAt)),
        )
    }
    await this.cmd.write('cairnRecBatch', args)
    const accounts = ops.filter((op) => op.kind === 'account')
    if (accounts.length > 0)
      await this.listed(
        accounts.filter((op) => !('delete' in op)).map((op) => op.id),
        accounts.filter((op) => 'delete' in op).map((op) => op.id),
      )
  }

  /**
   * Keeps the global account index: after the account's own records, since it lives in
   * another slot. An id listed without a record is skipped by listAccounts.
   */
  private async listed(add: string[], remove: string[]): Promise<void> {
    try {
      for (const id of add) await this.cmd.client.zadd(ALL_ACCOUNTS, 0, id)
      for (const id of remove) await this.cmd.client.zrem(ALL_ACCOUNTS, id)
    } catch (err) {
      throw storeError(err)
    }
  }

  async add(
    kind: 'usage',
    id: string,
    fields: Record<string, number>,
    set: Record<string, number> = {},
    token = '',
  ): Promise<Record<string, number>> {
    checkId(id)
    const adds = Object.entries(fields)
    const args: (string | number)[] = [
      recordKey(kind, id),
      indexKey(kind, groupOf(id)),
      `c:{${groupOf(id)}}:added:${token}`,
      id,
      token,
      adds.length,
    ]
    for (const [f, n] of adds) args.push(f, Math.round(n))
    for (const [f, n] of Object.entries(set)) args.push(f, Math.round(n))
    // Counters: not waited on by a replica, like the rest of usage (a crash loses a pass).
    const flat: string[] = await this.cmd.read('cairnRecAdd', args)
    const out: Record<string, number> = {}
    for (let i = 0; i < flat.length; i += 2) out[flat[i]!] = Number(flat[i + 1])
    return out
  }
}
