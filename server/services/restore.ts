// Restoring a prefix or range of a namespace to a point (the contract's "History and restore"): the
// namespace as it was then and as it is now are walked side by side in key order, and every
// key whose state differs is written back, value, metadata and expiry, or deleted, as new
// writes in transactions of at most BATCH keys. A key already in its state at the point is
// not written, so a restore sent again after a crash writes only what the first did not.
// A dry run walks the same way and writes nothing: it counts the keys a restore would write
// (the dashboard's preview), by the very comparison the restore makes.
import type { Account, NamespaceInfo } from './accounts.js'
import type { Data } from './data.js'
import type { History } from './history.js'
import type { HistoryPoint, ListedEntry, Listed, Store, TxOp } from '../store/types.js'

/** Keys written per transaction, and the value bytes that end one sooner. */
const BATCH = 1000
const BATCH_BYTES = 8 * 1024 * 1024
/** Entries read per page of either walk. */
const PAGE = 100

/** UTF-8 byte order, the listings' order. */
function compare(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'))
}

/** A walk over a listing, a page at a time. */
class Walk {
  private page: ListedEntry[] = []
  private i = 0
  private next: string | undefined
  private started = false
  version = 0

  constructor(private read: (after: string | undefined) => Promise<Listed>) {}

  async peek(): Promise<ListedEntry | undefined> {
    while (this.i >= this.page.length) {
      if (this.started && this.next === undefined) return undefined
      const got = await this.read(this.next)
      if (!this.started) this.version = got.version
      this.started = true
      this.page = got.entries ?? []
      this.i = 0
      this.next = got.next
    }
    return this.page[this.i]
  }

  take(): void {
    this.i++
  }
}

const same = (a: Buffer | null | undefined, b: Buffer | null | undefined) =>
  (a ?? null) === null ? (b ?? null) === null : b != null && a!.equals(b)

/** Whether the entry now is as it was at the point (an expired one counts as gone). */
function unchanged(then: ListedEntry, now: ListedEntry): boolean {
  return (
    then.version === now.version ||
    (then.expiresAt === now.expiresAt &&
      same(then.value, now.value) &&
      same(then.metadata, now.metadata))
  )
}

/** The keys a restore covers: a prefix, and within it a range (`start` <= key < `end`). */
export interface RestoreScope {
  prefix: string
  start?: string
  end?: string
}

export async function restore(
  svc: { store: Store; data: Data; history: History },
  account: Account,
  info: NamespaceInfo,
  point: HistoryPoint,
  scope: RestoreScope,
  o: { dryRun?: boolean } = {},
): Promise<{ restored: number; version: number }> {
  const include = { values: true, metadata: true }
  // An empty bound is none (wire/range.ts); the engine's listAt takes only real ones.
  const range = {
    prefix: scope.prefix,
    start: scope.start || undefined,
    end: scope.end || undefined,
  }
  const then = new Walk((after) =>
    svc.history.listAt(info, { ...range, after, limit: PAGE, include }, point),
  )
  const now = new Walk((after) =>
    svc.store.list(info.storeName, { ...range, after, limit: PAGE, include }),
  )
  let restored = 0
  let version = 0
  let ops: TxOp[] = []
  let bytes = 0
  const flush = async () => {
    if (ops.length === 0) return
    restored += ops.length
    if (o.dryRun) {
      ops = []
      bytes = 0
      return
    }
    const done = await svc.data.transact(account, info, ops)
    version = done.version
    ops = []
    bytes = 0
  }
  const put = (e: ListedEntry) => {
    const op: TxOp = { op: 'put', key: e.key, value: e.value! }
    if (e.expiresAt !== undefined) op.expiresAt = e.expiresAt
    if (e.metadata != null) op.metadata = e.metadata
    ops.push(op)
    bytes += e.value!.length
  }
  for (;;) {
    const clock = Date.now()
    let a = await then.peek()
    // A key whose time at the point has run out by now would be gone at once: it is absent.
    while (a !== undefined && a.expiresAt !== undefined && a.expiresAt <= clock) {
      then.take()
      a = await then.peek()
    }
    const b = await now.peek()
    if (a === undefined && b === undefined) break
    const order = a === undefined ? 1 : b === undefined ? -1 : compare(a.key, b.key)
    if (order < 0) {
      put(a!)
      then.take()
    } else if (order > 0) {
      ops.push({ op: 'delete', key: b!.key })
      now.take()
    } else {
      if (!unchanged(a!, b!)) put(a!)
      then.take()
      now.take()
    }
    if (ops.length >= BATCH || bytes >= BATCH_BYTES) await flush()
  }
  await flush()
  // A dry run answers the version its count was made against.
  if (restored === 0 || o.dryRun) version = await svc.store.feed.version(info.storeName)
  return { restored, version }
}
