// Ranges over the engine's listing, which takes a prefix and a key to list strictly after:
// `start` (inclusive) is looked up on its own and the walk goes on after it; `end` ends the
// walk, and one key more than the page is asked for, so a page that fills knows whether keys
// remain in the range (no page is empty while a cursor is handed out).
import type { Db } from '../../engine/index.js'
import type { ListResult } from '../../engine/types.js'
import { compareKeys } from '../../engine/utf8.js'
import type { KeyRangeOptions, ListOptions, RangeCounts } from './types.js'

const ranged = (o: KeyRangeOptions) => (o.start ?? '') !== '' || (o.end ?? '') !== ''

/** db.listNow with `start` and `end`; undefined when only list() can answer now. */
export function listRangeNow(db: Db, ns: string, o: ListOptions): ListResult | undefined {
  if (!ranged(o)) return db.listNow(ns, o)
  const start = o.start ?? ''
  const end = o.end ?? ''
  const prefix = o.prefix ?? ''
  const limit = o.limit ?? 1000
  const reverse = o.reverse === true
  const keys: string[] = []
  let after = o.after
  if (after === undefined) {
    if (!reverse && start !== '') {
      if (start.startsWith(prefix) && (end === '' || compareKeys(start, end) < 0)) {
        if (db.getNow(ns, start) !== undefined) keys.push(start)
      }
      after = start
    } else if (reverse && end !== '') after = end
  }
  const page = db.listNow(ns, { prefix, after, limit: limit + 1 - keys.length, reverse })
  if (page === undefined) return undefined
  for (const k of page.keys) {
    if (!reverse && end !== '' && compareKeys(k, end) >= 0) break
    if (reverse && start !== '' && compareKeys(k, start) < 0) break
    keys.push(k)
  }
  const res: ListResult = { keys, version: page.version }
  if (keys.length > limit) {
    keys.length = limit
    res.next = keys[limit - 1]
  }
  return res
}

export async function listRange(db: Db, ns: string, o: ListOptions): Promise<ListResult> {
  const now = listRangeNow(db, ns, o)
  if (now !== undefined) return now
  // A large namespace's sorted list is still being made after open: wait for it.
  await db.list(ns, { limit: 1 })
  return listRange(db, ns, o)
}

/** The range's live keys and bytes, read in one turn (the index is in memory). */
export async function countRange(db: Db, ns: string, o: KeyRangeOptions): Promise<RangeCounts> {
  await db.list(ns, { limit: 1 })
  if ((o.prefix ?? '') === '' && !ranged(o)) {
    const s = db.namespaceStats(ns)!
    return { count: s.keys, bytes: s.bytes, version: db.namespaceVersion(ns) }
  }
  // stat answers from the index at once (its promise is already settled): every key is
  // counted in this turn, at one version.
  const stats: Promise<{ bytes: number } | undefined>[] = []
  let after: string | undefined
  let version = 0
  for (;;) {
    const page = listRangeNow(db, ns, { ...o, after, limit: 10_000 })
    if (page === undefined) return countRange(db, ns, o)
    version = page.version ?? 0
    for (const k of page.keys) stats.push(db.stat(ns, k))
    if (page.next === undefined) break
    after = page.next
  }
  let count = 0
  let bytes = 0
  for (const s of await Promise.all(stats)) {
    if (s === undefined) continue
    count++
    bytes += s.bytes
  }
  return { count, bytes, version }
}
