// Data directories written before the storage seam kept records in an older layout; this
// rewrites them once, at open, in atomic batches, so a crash part way leaves records that
// the next open finishes:
// - sys/keys was keyed by key id; it is now `<account id>/<key id>` (an account's keys list
//   by prefix), with sys/keyhash mapping each secret's hash to that id;
// - sys/usage day records held their operation counts in a nested `operations` object; a
//   counter record is now flat (usage.ts, UsageFields).
import type { Db } from '../../engine/index.js'

const KEYS = 'sys/keys'
const KEYHASH = 'sys/keyhash'
const USAGE = 'sys/usage'

async function* all(db: Db, ns: string): AsyncGenerator<[string, unknown]> {
  let after: string | undefined
  for (;;) {
    const page = await db.list(ns, { after, limit: 1000 })
    for (const key of page.keys) {
      const got = db.getNow(ns, key)
      if (got !== undefined) yield [key, got.value]
    }
    if (!page.next) return
    after = page.next
  }
}

export async function migrateLegacyRecords(db: Db): Promise<void> {
  const ops: Parameters<Db['batch']>[0] = []
  for await (const [key, value] of all(db, KEYS)) {
    if (key.includes('/')) continue
    const rec = value as { accountId: string; hash: string }
    const id = `${rec.accountId}/${key}`
    ops.push(
      { type: 'put', ns: KEYS, key: id, value: rec },
      { type: 'put', ns: KEYHASH, key: rec.hash, value: id },
      { type: 'delete', ns: KEYS, key },
    )
  }
  for await (const [key, value] of all(db, USAGE)) {
    const day = value as { operations?: Record<string, number> } & Record<string, unknown>
    if (day.operations === undefined) continue
    const flat: Record<string, number> = { ...day.operations }
    for (const f of ['errors', 'rateLimited', 'bytesIn', 'bytesOut', 'storageBytes'])
      flat[f] = Number(day[f] ?? 0)
    ops.push({ type: 'put', ns: USAGE, key, value: flat })
  }
  for (let i = 0; i < ops.length; i += 999) await db.batch(ops.slice(i, i + 999))
}
