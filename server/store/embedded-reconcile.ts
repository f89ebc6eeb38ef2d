// A namespace exists while both its record and its engine namespace do (namespaces.ts). At
// open, what a failure or crash between the two steps of a create or drop left behind goes:
// a record without its engine namespace (a create never acknowledged, or a drop that could
// not remove its record), an engine namespace without a record (a drop cut short by a crash
// before this order was kept), and a record of an account that no longer exists.
import type { Db } from '../../engine/index.js'
import { SYSTEM_NAMESPACE } from './embedded-records.js'
import { USER_PREFIX, userNamespace } from './names.js'

export async function reconcileNamespaces(db: Db): Promise<void> {
  const known = new Set<string>()
  let after: string | undefined
  do {
    const page = await db.list(SYSTEM_NAMESPACE.namespace, { after, limit: 1000 })
    for (const id of page.keys) {
      const slash = id.indexOf('/')
      const accountId = id.slice(0, slash)
      if (db.getNow(SYSTEM_NAMESPACE.account, accountId) === undefined) {
        await db.delete(SYSTEM_NAMESPACE.namespace, id)
        continue
      }
      const name = userNamespace(accountId, id.slice(slash + 1))
      if (!db.hasNamespace(name)) await db.delete(SYSTEM_NAMESPACE.namespace, id)
      else known.add(name)
    }
    after = page.next
  } while (after)
  for (const n of db.namespaces()) {
    if (n.name.startsWith(USER_PREFIX) && !known.has(n.name)) await db.dropNamespace(n.name)
  }
}
