// History windows and reads at a point on the embedded engine (engine/README.md, "History and
// reads at a point"), with the metadata the embedded store keeps inside values taken out of
// each version (envelope.ts).
import type { Db } from '../../engine/index.js'
import type { GetResult } from '../../engine/types.js'
import { hasMetadata, metadataText, valueText } from './envelope.js'
import type { Entry, EntryHistory, EntryVersion, Listed, ListedEntry } from './types.js'

function entryOf(got: GetResult | undefined): Entry | undefined {
  if (got === undefined) return undefined
  const stored = got.value as Buffer
  const e: Entry = { value: valueText(stored), version: got.version }
  if (got.expiresAt !== undefined) e.expiresAt = got.expiresAt
  if (hasMetadata(stored)) e.metadata = metadataText(stored)
  return e
}

export function embeddedHistory(db: Db): EntryHistory {
  return {
    async setWindow(ns, window) {
      // Set at every start: the same window again is not written to the directory again.
      const had = db.getHistory(ns)
      if (had?.seconds === window.seconds && had.bytes === window.bytes) return
      if (had === undefined && (window.seconds === 0 || window.bytes === 0)) return
      db.setHistory(ns, window)
    },
    async getAt(ns, key, point) {
      return entryOf(db.getAt(ns, key, point))
    },
    async listAt(ns, o, point) {
      const values = o.include?.values === true || o.include?.metadata === true
      const page = await db.listAt(
        ns,
        {
          prefix: o.prefix,
          start: o.start,
          end: o.end,
          after: o.after,
          limit: o.limit,
          reverse: o.reverse,
          values,
        },
        point,
      )
      const out: Listed = { keys: page.keys, version: page.version }
      if (page.next !== undefined) out.next = page.next
      if (!o.include) return out
      out.entries = page.entries.map((p) => {
        const e: ListedEntry = { key: p.key, version: p.version }
        if (p.expiresAt !== undefined) e.expiresAt = p.expiresAt
        const stored = p.value as Buffer
        if (o.include?.values) e.value = valueText(stored)
        if (o.include?.metadata) e.metadata = metadataText(stored) ?? null
        return e
      })
      return out
    },
    async versions(ns, key, opts) {
      return db.history(ns, key, opts).map((h) => {
        const v: EntryVersion = { version: h.version, at: h.at }
        if (h.deleted) v.deleted = true
        if (h.value !== undefined) {
          const stored = h.value as Buffer
          v.value = valueText(stored)
          if (hasMetadata(stored)) v.metadata = metadataText(stored)
        }
        if (h.expiresAt !== undefined) v.expiresAt = h.expiresAt
        return v
      })
    },
    async window(ns) {
      return { from: db.historyFrom(ns), bytes: db.namespaceStats(ns)?.historyBytes ?? 0 }
    },
  }
}
