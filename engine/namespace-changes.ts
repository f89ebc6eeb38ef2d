// Namespaces made and dropped. The table on disk (namespaces-file.ts) changes first, and the
// index only once the new table is durable: a crash between the two leaves the table as the
// truth, and a failed write leaves everything as it was.
import type { DbCore } from './db-core.js'
import type { Namespace } from './parts.js'
import {
  NAMESPACES_FILE,
  type NamespaceTable,
  TableUnsure,
  writeNamespaces,
} from './namespaces-file.js'
import type { NamespaceInfo } from './types.js'

/** Makes `ns`; false when it is there already. */
export function addNamespace(db: DbCore, ns: string): boolean {
  if (db.keydir.byName.has(ns)) return false
  db.log.checkWritable()
  const id = db.table.nextId
  save(db, { nextId: id + 1, list: [...db.table.list, [id, ns]] })
  db.keydir.addNamespace(id, ns)
  return true
}

/** Drops `ns` and its keys; the namespace dropped, or undefined when there was none. */
export function removeNamespace(db: DbCore, ns: string): Namespace | undefined {
  const n = db.keydir.byName.get(ns)
  if (!n) return undefined
  db.log.checkWritable()
  save(db, { ...db.table, list: db.table.list.filter(([id]) => id !== n.id) })
  db.keydir.dropNamespace(n)
  return n
}

/** A namespace as namespaces() and namespaceStats() tell it. */
export function infoOf(n: Namespace, historyBytes: number): NamespaceInfo {
  return { name: n.name, keys: n.map.size, bytes: n.bytes, historyBytes }
}

/** The namespace table changes only once the new one is durable. */
function save(db: DbCore, next: NamespaceTable): void {
  try {
    writeNamespaces(db.dir, next, db.table)
  } catch (err) {
    // Writes stop until the table on disk is this one again (the log's retry writes it).
    if (err instanceof TableUnsure)
      throw db.log.refuseUntil(err.failure, NAMESPACES_FILE, () =>
        writeNamespaces(db.dir, db.table),
      )
    throw db.log.refuse(err, 'write', NAMESPACES_FILE)
  }
  db.table = next
}
