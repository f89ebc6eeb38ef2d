// A batch's operations, checked and encoded as the entries of one record (Db.batch).
import { expiry, keyBytes } from './arguments.js'
import { fail } from './errors.js'
import type { Entry, Namespace } from './parts.js'
import { DEL, FLAG_RAW, PUT } from './record.js'
import type { BatchOp } from './types.js'
import { encodeValue } from './values.js'

/** What a batch looks up as it checks its operations. */
export interface BatchHost {
  readonly now: () => number
  /** The namespace (NAMESPACE_NOT_FOUND when none). */
  nsOf(name: string): Namespace
  /** The key's version as the next write finds it, -1 when it is missing. */
  latest(n: Namespace, key: string): number
}

/**
 * The entries of the batch's operations, each checked (throwing INVALID_ARGUMENT or
 * NAMESPACE_NOT_FOUND before anything is staged), and the deletes left out because their
 * key is missing: decided, perhaps, on staged writes, so the answer waits for those.
 */
export function batchEntries(
  ops: BatchOp[],
  db: BatchHost,
): { entries: Entry[]; skipped: [Namespace, string][] } {
  const entries: Entry[] = []
  /** Deletes left out because the key is missing: decided, perhaps, on staged writes. */
  const skipped: [Namespace, string][] = []
  /** Keys this batch puts, by namespace: a later delete of one is a write. Made at a delete. */
  let put: Set<string> | null = null
  for (const op of ops) {
    const n = db.nsOf(op.ns)
    const keyLen = keyBytes(op.key)
    if (op.type === 'put') {
      const expiresAt =
        op.ttlMs === undefined && op.expiresAt === undefined
          ? 0
          : expiry(db.now(), op.ttlMs, op.expiresAt)
      const { flags, bytes } = encodeValue(op.value)
      put?.add(`${n.id}/${op.key}`)
      entries.push({
        n,
        key: op.key,
        keyLen,
        type: PUT,
        flags,
        // The encoder reuses its buffer: keep a copy of this one. Raw bytes are the caller's,
        // copied into the record before the batch returns.
        bytes: flags & FLAG_RAW ? bytes : Buffer.from(bytes),
        expiresAt,
      })
    } else if (op.type === 'delete') {
      put ??= new Set(entries.map((e) => `${e.n.id}/${e.key}`))
      // A delete of a missing key writes nothing (no version), as delete() does.
      if (!put.has(`${n.id}/${op.key}`) && db.latest(n, op.key) < 0) {
        skipped.push([n, op.key])
        continue
      }
      entries.push({ n, key: op.key, keyLen, type: DEL, flags: 0, bytes: null, expiresAt: 0 })
    } else {
      fail(
        'INVALID_ARGUMENT',
        `unknown batch operation type ${JSON.stringify((op as BatchOp).type)}`,
      )
    }
  }
  return { entries, skipped }
}
