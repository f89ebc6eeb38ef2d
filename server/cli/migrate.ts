// `cairn migrate --from-data DIR --to redis://...`: copies an embedded database into Redis
// Cluster, for moving up from one machine (docs/scale-out.md). Everything goes: accounts,
// their emails, keys and key hashes, namespaces, sessions, usage days, and every live entry
// with its value byte for byte, its TTL and its version (so ETags clients hold stay good).
// Every write is idempotent, and progress (accounts done, and per namespace the last key
// copied) is kept in <data>/migrate-progress.json, so a migration cut short runs again from
// where it stopped. At the end, every namespace's keys are counted on both sides. The file
// stays after a migration that ended well, marked done: the target is then in use, and the
// same command run again copies nothing over what the front ends have written since.
import fs from 'node:fs'
import path from 'node:path'
import type { AccountRecord, KeyRecord } from '../services/account-model.js'
import { keyRecordId } from '../services/account-model.js'
import { openEmbeddedStore } from '../store/embedded.js'
import { userNamespace } from '../store/names.js'
import type { RecordKind, Records, Restored, Store } from '../store/types.js'

export const PROGRESS_FILE = 'migrate-progress.json'
const PAGE = 500

export interface MigrateReport {
  accounts: number
  keys: number
  namespaces: number
  entries: number
  sessions: number
  usageDays: number
  /** Namespaces whose key counts differ between source and target (empty when all agree). */
  mismatched: { namespace: string; source: number; target: number }[]
  resumed: boolean
  /** An earlier run to this target ended well: nothing was copied or counted this time. */
  alreadyMigrated: boolean
}

interface Progress {
  target: string
  accounts: string[]
  /** Per store namespace: the last key copied, or null once it is all copied. */
  namespaces: Record<string, string | null>
  /** When a run ended with every count agreeing. */
  done?: string
}

async function* everyRecord<T>(r: Records, kind: RecordKind, prefix: string) {
  let after: string | undefined
  do {
    const page = await r.list<T>(kind, prefix, after)
    for (const item of page.items) yield item
    after = page.next
  } while (after)
}

async function countKeys(store: Store, ns: string): Promise<number> {
  let n = 0
  let after: string | undefined
  do {
    const page = await store.list(ns, { after, limit: 1000 })
    n += page.keys.length
    after = page.next
  } while (after)
  return n
}

export async function migrate(
  fromDir: string,
  to: Store,
  target: string,
  say: (line: string) => void = () => {},
): Promise<MigrateReport> {
  if (to.restore === undefined) throw new Error('the target store cannot take migrated entries')
  const progressFile = path.join(fromDir, PROGRESS_FILE)
  let progress: Progress = { target, accounts: [], namespaces: {} }
  let resumed = false
  try {
    const saved = JSON.parse(fs.readFileSync(progressFile, 'utf8')) as Progress
    if (saved.target === target) {
      progress = saved
      resumed = true
    }
  } catch {}
  const save = () => fs.writeFileSync(progressFile, JSON.stringify(progress), { mode: 0o600 })
  const report: MigrateReport = {
    accounts: 0,
    keys: 0,
    namespaces: 0,
    entries: 0,
    sessions: 0,
    usageDays: 0,
    mismatched: [],
    resumed,
    alreadyMigrated: progress.done !== undefined,
  }
  // Copying again would put back accounts, usage and entries as they were here, over what
  // the front ends have changed there since.
  if (report.alreadyMigrated) return report
  const from = await openEmbeddedStore(fromDir, 'always')
  try {
    const src = from.records
    const dst = to.records
    const names: string[] = []
    for await (const [id, acct] of everyRecord<AccountRecord>(src, 'account', '')) {
      report.accounts++
      const nsOf = everyRecord<{ createdAt: string }>(src, 'namespace', `${id}/`)
      for await (const [nsId] of nsOf) names.push(userNamespace(id, nsId.slice(id.length + 1)))
      if (progress.accounts.includes(id)) continue
      await dst.put('email', acct.email, id)
      for await (const [keyId, key] of everyRecord<KeyRecord>(src, 'key', `${id}/`)) {
        await dst.put('key', keyId, key)
        await dst.put('keyhash', key.hash, keyRecordId(id, key.id))
        report.keys++
      }
      for await (const [nsId, rec] of everyRecord<{ createdAt: string }>(
        src,
        'namespace',
        `${id}/`,
      )) {
        await dst.put('namespace', nsId, rec)
        await to.createNamespace(userNamespace(id, nsId.slice(id.length + 1)))
      }
      for await (const [sid, s] of everyRecord<{ expiresAt: number }>(src, 'session', `${id}/`)) {
        if (s.expiresAt <= Date.now()) continue
        await dst.put('session', sid, s, { expiresAt: s.expiresAt })
        report.sessions++
      }
      for await (const [day, counts] of everyRecord<Record<string, number>>(
        src,
        'usage',
        `${id}/`,
      )) {
        await dst.add('usage', day, {}, counts)
        report.usageDays++
      }
      // The account record last: until it is there, the account does not exist on the target.
      await dst.put('account', id, acct)
      progress.accounts.push(id)
      save()
      say(`account ${acct.email}: records copied`)
    }
    for (const ns of names) {
      report.namespaces++
      let after = progress.namespaces[ns]
      if (after === null) continue
      for (;;) {
        const page = await from.list(ns, { after: after ?? undefined, limit: PAGE })
        const rows: Restored[] = []
        for (const key of page.keys) {
          const got = await from.get(ns, key)
          if (got !== undefined) rows.push({ key, ...got })
        }
        // Even with no rows: the namespace's version moves on past its deletes.
        await to.restore(ns, rows, page.version)
        report.entries += rows.length
        if (!page.next) break
        after = page.next
        progress.namespaces[ns] = after
        save()
      }
      progress.namespaces[ns] = null
      save()
      say(`namespace ${ns}: entries copied`)
    }
    for (const ns of names) {
      const [a, b] = [await countKeys(from, ns), await countKeys(to, ns)]
      if (a !== b) report.mismatched.push({ namespace: ns, source: a, target: b })
    }
  } finally {
    await from.close()
  }
  if (report.mismatched.length === 0) {
    progress.done = new Date().toISOString()
    save()
  }
  return report
}
