// Applying an import whose every line was checked (server/v1/import.ts): its entries in
// order, each a write of its own (a version, a watch event), up to 1,000 to a transaction; then,
// in `replace` mode, the deletion of every key of the range that the import did not write.
// Those are the range's keys at a version no later than the namespace's before the import,
// so no set of the imported keys is kept: an import of any size costs the server one
// transaction's ops at a time. Sent again as a whole, it leaves the namespace the same.
import type { Account, NamespaceInfo } from './accounts.js'
import type { Data } from './data.js'
import type { ImportEntry } from '../wire/import-line.js'
import type { KeyRange } from '../wire/range.js'
import type { TxOp } from '../store/types.js'

const OPS_PER_WRITE = 1000

export interface Imported {
  imported: number
  deleted: number
  version: number
}

export async function applyImport(
  data: Data,
  account: Account,
  info: NamespaceInfo,
  entries: AsyncIterable<ImportEntry>,
  mode: 'merge' | 'replace',
  range: KeyRange,
): Promise<Imported> {
  const before = (await data.list(info, { limit: 1 })).version
  let version = before
  let imported = 0
  let ops: TxOp[] = []
  const keys = new Set<string>()
  const flush = async () => {
    if (ops.length === 0) return
    const done = await data.importWrite(account, info, ops)
    version = done.version
    imported += ops.length
    ops = []
    keys.clear()
  }
  for await (const e of entries) {
    // Passed while the import waited: skipped, as the contract says.
    if (e.expiresAt !== undefined && e.expiresAt <= Date.now()) continue
    // One transaction writes a key once: a key given again goes in the next.
    if (keys.has(e.key) || ops.length >= OPS_PER_WRITE) await flush()
    const op: TxOp = { op: 'put', key: e.key, value: e.value }
    if (e.expiresAt !== undefined) op.expiresAt = e.expiresAt
    if (e.metadata !== undefined) op.metadata = e.metadata
    ops.push(op)
    keys.add(e.key)
  }
  await flush()
  let deleted = 0
  if (mode === 'replace') {
    let after: string | undefined
    for (;;) {
      const page = await data.list(info, {
        prefix: range.prefix,
        start: range.start,
        end: range.end,
        after,
        limit: OPS_PER_WRITE,
        include: { metadata: true },
      })
      const stale = (page.entries ?? []).filter((e) => e.version <= before).map((e) => e.key)
      if (stale.length > 0) {
        const done = await data.importWrite(
          account,
          info,
          stale.map((key) => ({ op: 'delete', key })),
        )
        for (const r of done.results) if ((r as { deleted?: boolean }).deleted) deleted++
        version = Math.max(version, done.version)
      }
      if (page.next === undefined) break
      after = page.next
    }
  }
  return { imported, deleted, version }
}
