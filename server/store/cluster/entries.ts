// Entries on Redis Cluster: one hash tag per namespace (`{n:<ns>}`), so a namespace's
// entries, its ordered index and its counters share a slot and every operation is one
// script on one master (entry-scripts.ts; docs/redis.md, "Entries").
import type { Commands } from './commands.js'
import type {
  Entries,
  Entry,
  EntryCheck,
  EntryOp,
  EntryStat,
  EntryWrite,
  ListOptions,
  Listed,
  NamespaceCounts,
  Restored,
  Written,
} from '../types.js'

const meta = (ns: string) => `c:{n:${ns}}:m`
const generations = (ns: string) => `c:{n:${ns}}:g`
const garbage = (ns: string, g: string) => `c:{n:${ns}}:${g}:`

/** A namespace name that cannot break out of its hash tag. */
function checkName(ns: string): void {
  if (ns === '' || /[{}]/.test(ns))
    throw Object.assign(new Error(`namespace name "${ns}" may not hold { or }`), {
      code: 'INVALID_ARGUMENT',
    })
}

function expiry(o: { ttlMs?: number; expiresAt?: number } | undefined, now: number): string {
  if (o?.expiresAt !== undefined) return String(Math.floor(o.expiresAt))
  if (o?.ttlMs !== undefined) return String(now + Math.floor(o.ttlMs))
  return ''
}

function toEntry(r: Buffer[] | null): Entry | undefined {
  if (!r) return undefined
  const e: Entry = { value: r[0]!, version: Number(r[1]!.toString()) }
  if (r[2]) e.expiresAt = Number(r[2].toString())
  return e
}

export class ClusterEntries implements Omit<Entries, 'transact'> {
  constructor(private cmd: Commands) {}

  async createNamespace(ns: string): Promise<boolean> {
    checkName(ns)
    return (await this.cmd.write('cairnCreate', [meta(ns), generations(ns)])) === 1
  }

  async dropNamespace(ns: string): Promise<boolean> {
    checkName(ns)
    const g = await this.cmd.write('cairnDrop', [meta(ns)])
    if (g === null || g === undefined) return false
    // The meta hash is gone, so every script now refuses the namespace; its entries are
    // garbage of a generation no later namespace of the name can reach, unlinked in chunks.
    const base = garbage(ns, String(g))
    while ((await this.cmd.read('cairnSweep', [`${base}i`, `${base}x`, `${base}e:`])) > 0) {}
    return true
  }

  async namespaceCounts(ns: string): Promise<NamespaceCounts | undefined> {
    try {
      const [keys, bytes] = await this.cmd.read('cairnCounts', [meta(ns), Date.now()])
      return { keys: Number(keys), bytes: Number(bytes) }
    } catch (err) {
      if ((err as { code?: string }).code === 'NAMESPACE_NOT_FOUND') return undefined
      throw err
    }
  }

  get(ns: string, key: string): Promise<Entry | undefined> {
    return this.cmd.read('cairnGet', [meta(ns), key, Date.now()], true).then(toEntry)
  }

  async stat(ns: string, key: string): Promise<EntryStat | undefined> {
    const r = await this.cmd.read('cairnStat', [meta(ns), key, Date.now()])
    if (!r) return undefined
    const s: EntryStat = { version: Number(r[0]), bytes: Number(r[1]) }
    if (r[2]) s.expiresAt = Number(r[2])
    return s
  }

  async put(ns: string, key: string, value: Buffer, o?: EntryWrite): Promise<Written> {
    const now = Date.now()
    const want = o?.ifVersion === undefined ? '' : o.ifVersion === null ? '-' : String(o.ifVersion)
    const [version, created] = await this.cmd.write('cairnPut', [
      meta(ns),
      key,
      value,
      now,
      expiry(o, now),
      want,
    ])
    return { version: Number(version), created: created === 1 }
  }

  async delete(ns: string, key: string, o?: { ifVersion?: number }): Promise<boolean> {
    const want = o?.ifVersion === undefined ? '' : String(o.ifVersion)
    return (await this.cmd.write('cairnDelete', [meta(ns), key, Date.now(), want])) === 1
  }

  async list(ns: string, o: ListOptions = {}): Promise<Listed> {
    const limit = o.limit ?? 1000
    const keys: string[] = await this.cmd.read('cairnList', [
      meta(ns),
      o.prefix ?? '',
      o.after ?? '',
      limit,
      o.reverse ? '1' : '',
      Date.now(),
    ])
    if (keys.length <= limit) return { keys, version: 0 }
    keys.length = limit
    return { keys, next: keys[limit - 1], version: 0 }
  }

  /** Writes entries with the versions they had elsewhere (cairn migrate). */
  async restore(ns: string, rows: Restored[]): Promise<void> {
    const args: (string | Buffer | number)[] = [meta(ns), Date.now()]
    for (const r of rows)
      args.push(r.key, r.value, r.version, r.expiresAt === undefined ? '' : String(r.expiresAt))
    await this.cmd.write('cairnImport', args)
  }

  async batch(ns: string, ops: EntryOp[], checks: EntryCheck[] = []): Promise<{ version: number }> {
    const now = Date.now()
    const args: (string | Buffer | number)[] = [meta(ns), now, checks.length]
    for (const c of checks) args.push(c.key, c.version === null ? '-' : String(c.version))
    for (const op of ops) {
      if (op.type === 'put') args.push('p', op.key, op.value, expiry(op, now))
      else args.push('d', op.key)
    }
    return { version: Number(await this.cmd.write('cairnBatch', args)) }
  }
}
