// Records on the embedded engine: one system namespace per kind, the record's id as its key
// and the value as the engine stores any value (msgpack). Every system namespace's name holds
// a `/`, which no API namespace name may, so no API call can reach them. Batches are atomic
// across kinds here (one engine batch), which is more than the seam promises.
import { LRUCache } from 'lru-cache'
import type { Db } from '../../engine/index.js'
import { migrateLegacyRecords } from './embedded-legacy.js'
import type { RecordKind, RecordOp, Records } from './types.js'

export const SYSTEM_NAMESPACE: Record<RecordKind, string> = {
  account: 'sys/accounts',
  email: 'sys/emails',
  key: 'sys/keys',
  keyhash: 'sys/keyhash',
  namespace: 'sys/namespaces',
  session: 'sys/sessions',
  usage: 'sys/usage',
  stripe_customer: 'sys/stripe-customers',
  stripe_event: 'sys/stripe-events',
  downgrade: 'sys/downgrades',
  alert: 'sys/alerts',
  webhook: 'sys/webhooks',
  meter: 'sys/meter',
}

const groupOf = (id: string) => {
  const slash = id.indexOf('/')
  return slash < 0 ? id : id.slice(0, slash)
}

export class EmbeddedRecords implements Records {
  /** Per group, the tail of its pending creates and adds: they read, then write. */
  private queues = new Map<string, Promise<unknown>>()
  /** Tokens of recent additions (Records.add); bounded, since a retry follows its loss at once. */
  private tokens = new LRUCache<string, true>({ max: 10_000 })

  private constructor(private db: Db) {}

  static async open(db: Db): Promise<EmbeddedRecords> {
    for (const ns of Object.values(SYSTEM_NAMESPACE)) await db.createNamespace(ns)
    await migrateLegacyRecords(db)
    return new EmbeddedRecords(db)
  }

  /** Runs `fn` after every earlier serialised call on the same group. */
  private serial<T>(group: string, fn: () => Promise<T>): Promise<T> {
    const before = this.queues.get(group) ?? Promise.resolve()
    const run = before.then(fn, fn)
    const tail = run.catch(() => {})
    this.queues.set(group, tail)
    tail.then(() => {
      if (this.queues.get(group) === tail) this.queues.delete(group)
    })
    return run
  }

  /** The record at once, from the engine's in-memory index (no promise). */
  getNow<T>(kind: RecordKind, id: string): T | undefined {
    return this.db.getNow(SYSTEM_NAMESPACE[kind], id)?.value as T | undefined
  }

  async get<T>(kind: RecordKind, id: string): Promise<T | undefined> {
    return (await this.db.get(SYSTEM_NAMESPACE[kind], id))?.value as T | undefined
  }

  async put(kind: RecordKind, id: string, value: unknown, o?: { expiresAt?: number }) {
    await this.db.put(SYSTEM_NAMESPACE[kind], id, value, { expiresAt: o?.expiresAt })
  }

  create(kind: RecordKind, id: string, value: unknown, o?: { maxInGroup?: number }) {
    const ns = SYSTEM_NAMESPACE[kind]
    const group = groupOf(id)
    return this.serial(group, async () => {
      if (this.db.getNow(ns, id) !== undefined) return 'exists' as const
      if (o?.maxInGroup !== undefined) {
        const page = await this.db.list(ns, { prefix: `${group}/`, limit: o.maxInGroup })
        if (page.keys.length >= o.maxInGroup) return 'full' as const
      }
      await this.db.put(ns, id, value, { ifVersion: null })
      return 'created' as const
    })
  }

  delete(kind: RecordKind, id: string): Promise<boolean> {
    return this.db.delete(SYSTEM_NAMESPACE[kind], id)
  }

  async list<T>(kind: RecordKind, prefix: string, after?: string, limit = 1000) {
    const ns = SYSTEM_NAMESPACE[kind]
    const page = await this.db.list(ns, { prefix, after, limit })
    const items: [string, T][] = []
    for (const key of page.keys) {
      const got = this.db.getNow(ns, key)
      if (got !== undefined) items.push([key, got.value as T])
    }
    return { items, next: page.next }
  }

  async batch(ops: RecordOp[]): Promise<void> {
    if (ops.length === 0) return
    await this.db.batch(
      ops.map((op) =>
        'delete' in op
          ? { type: 'delete' as const, ns: SYSTEM_NAMESPACE[op.kind], key: op.id }
          : {
              type: 'put' as const,
              ns: SYSTEM_NAMESPACE[op.kind],
              key: op.id,
              value: op.value,
              expiresAt: op.expiresAt,
            },
      ),
    )
  }

  /**
   * The token is not needed here: an add the engine refused was not made, and one it
   * acknowledged is not sent again (types.ts).
   */
  add(
    kind: 'usage',
    id: string,
    fields: Record<string, number>,
    set?: Record<string, number>,
    token?: string,
  ): Promise<Record<string, number>> {
    const ns = SYSTEM_NAMESPACE[kind]
    return this.serial(groupOf(id), async () => {
      const cur = { ...((this.db.getNow(ns, id)?.value as Record<string, number>) ?? {}) }
      // An answer is never lost inside one process, but the seam promises every backend
      // the same: an addition made under a token is made once.
      if (token !== undefined && this.tokens.has(`${id}\n${token}`)) return cur
      for (const [f, n] of Object.entries(fields)) cur[f] = (cur[f] ?? 0) + n
      if (set) Object.assign(cur, set)
      await this.db.put(ns, id, cur)
      if (token !== undefined) this.tokens.set(`${id}\n${token}`, true)
      return cur
    })
  }
}
