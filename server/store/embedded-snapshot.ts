// Consistent reads of a range at one version on the embedded engine (exports). The engine
// keeps only the newest record of a key in its index, so a read that takes many turns would
// see writes made meanwhile. Instead, while a snapshot is open, every write to its namespace
// first keeps what it replaces: the key's state as the next write finds it (db.latestNow,
// staged writes included), once per key, only for keys the read has not passed yet. Every
// write made after the snapshot began takes a version above the snapshot's, so the first
// state kept for a key is its state at that version; a key never written since is read from
// the index, once every write staged before the snapshot has settled.
//
// Two limits, both argued in docs/api.md: a key whose expiry passes while the read goes on
// is left out (it is gone by the time it is read, and an import would skip it anyway); and
// the states kept are bounded (KEPT_MAX bytes): a snapshot of a namespace rewritten faster
// than its reader takes it fails instead of holding the server's memory.
import type { Db } from '../../engine/index.js'
import type { BatchOp } from '../../engine/types.js'
import { compareKeys } from '../../engine/utf8.js'
import { listRangeNow } from './embedded-range.js'
import { hasMetadata, metadataText, valueText } from './envelope.js'
import type { ExportedEntry, KeyRangeOptions, RangeSnapshot } from './types.js'

/** The most bytes of replaced states one snapshot keeps. */
const KEPT_MAX = 64 * 1024 * 1024

/** The engine's version counter of a namespace: the version its last staged write took. */
function assignedVersion(db: Db, ns: string): number {
  const n = db.keydir.byName.get(ns) as { version: number } | undefined
  return n === undefined ? db.namespaceVersion(ns) : n.version
}

function exported(key: string, got: { value: unknown; version: number; expiresAt?: number }) {
  const stored = got.value as Buffer
  const e: ExportedEntry = { key, value: stored, version: got.version }
  if (got.expiresAt !== undefined) e.expiresAt = got.expiresAt
  if (hasMetadata(stored)) {
    e.value = valueText(stored)
    e.metadata = metadataText(stored)
  }
  return e
}

const live = (e: ExportedEntry | undefined, now: number) =>
  e !== undefined && (e.expiresAt === undefined || e.expiresAt > now)

class Snapshot implements RangeSnapshot {
  /** State at `version` of keys written since, by key (undefined: absent then). */
  kept = new Map<string, ExportedEntry | undefined>()
  keptBytes = 0
  failed: Error | undefined
  /** The last key handed out. */
  passed: string | undefined
  private settled: Promise<void>
  private ended = false

  constructor(
    private db: Db,
    readonly ns: string,
    readonly range: { prefix: string; start: string; end: string },
    readonly version: number,
    private onClose: (s: Snapshot) => void,
  ) {
    // Writes staged before now settle before any key is read from the index.
    this.settled = db.drain().then(() => {
      if (db.namespaceVersion(ns) < version)
        this.failed = Object.assign(new Error('a write before the export failed; try again'), {
          code: 'IO_ERROR',
        })
    })
  }

  wants(key: string): boolean {
    const r = this.range
    return (
      !this.kept.has(key) &&
      key.startsWith(r.prefix) &&
      (this.passed === undefined || compareKeys(key, this.passed) > 0) &&
      (r.start === '' || compareKeys(key, r.start) >= 0) &&
      (r.end === '' || compareKeys(key, r.end) < 0)
    )
  }

  keep(key: string): void {
    if (this.failed) return
    const got = this.db.latestNow(this.ns, key)
    const e = got === undefined ? undefined : exported(key, got)
    this.kept.set(key, e)
    this.keptBytes += key.length + 64 + (e ? e.value.length + (e.metadata?.length ?? 0) : 0)
    if (this.keptBytes > KEPT_MAX) {
      this.failed = Object.assign(
        new Error(
          'the namespace is being rewritten faster than the export is read; export again, or read faster',
        ),
        { code: 'IO_ERROR' },
      )
      this.kept.clear()
    }
  }

  async next(limit: number): Promise<ExportedEntry[]> {
    await this.settled
    for (;;) {
      if (this.failed) throw this.failed
      if (this.ended) return []
      const page = listRangeNow(this.db, this.ns, {
        ...this.range,
        after: this.passed,
        limit,
      })
      if (page === undefined) {
        await this.db.list(this.ns, { limit: 1 })
        continue
      }
      const last = page.next === undefined ? undefined : page.keys.at(-1)
      // Keys deleted since the snapshot are not in the index: their kept states join in.
      let order = page.keys
      const anyKept = this.kept.size > 0
      if (anyKept) {
        const keys = new Set(page.keys)
        for (const k of this.kept.keys())
          if (last === undefined || compareKeys(k, last) <= 0) keys.add(k)
        order = [...keys].sort(compareKeys)
      }
      const now = Date.now()
      const out: ExportedEntry[] = []
      for (const k of order) {
        let e: ExportedEntry | undefined
        if (anyKept && this.kept.has(k)) e = this.kept.get(k)
        else {
          const got = this.db.getNow(this.ns, k)
          e = got === undefined ? undefined : exported(k, got)
        }
        if (live(e, now)) out.push(e!)
      }
      if (last === undefined) this.ended = true
      else this.passed = last
      if (anyKept)
        for (const k of order) {
          if (!this.kept.has(k)) continue
          const e = this.kept.get(k)
          this.keptBytes -= k.length + 64 + (e ? e.value.length + (e.metadata?.length ?? 0) : 0)
          this.kept.delete(k)
        }
      if (out.length > 0 || this.ended) return out
    }
  }

  close(): void {
    this.kept.clear()
    this.ended = true
    this.onClose(this)
  }
}

/** Every open snapshot, by namespace, and the hooks on the engine's writes that feed them. */
export class Snapshots {
  private open = new Map<string, Set<Snapshot>>()

  constructor(private db: Db) {
    const put = db.put.bind(db)
    const del = db.delete.bind(db)
    const batch = db.batch.bind(db)
    db.put = (ns, key, value, opts) => {
      if (this.open.size > 0) this.before(ns, key)
      return put(ns, key, value, opts)
    }
    db.delete = (ns, key, opts) => {
      if (this.open.size > 0) this.before(ns, key)
      return del(ns, key, opts)
    }
    db.batch = (ops: BatchOp[], opts) => {
      if (this.open.size > 0 && Array.isArray(ops)) for (const op of ops) this.before(op.ns, op.key)
      return batch(ops, opts)
    }
  }

  private before(ns: string, key: string): void {
    const open = this.open.get(ns)
    if (open === undefined || typeof key !== 'string') return
    for (const s of open) if (s.wants(key)) s.keep(key)
  }

  async take(ns: string, o: KeyRangeOptions): Promise<RangeSnapshot> {
    // Waits for a large namespace's sorted list after open, and says NAMESPACE_NOT_FOUND.
    await this.db.list(ns, { limit: 1 })
    const range = { prefix: o.prefix ?? '', start: o.start ?? '', end: o.end ?? '' }
    const s = new Snapshot(this.db, ns, range, assignedVersion(this.db, ns), (gone) => {
      const set = this.open.get(ns)
      set?.delete(gone)
      if (set?.size === 0) this.open.delete(ns)
    })
    const set = this.open.get(ns) ?? new Set<Snapshot>()
    this.open.set(ns, set)
    set.add(s)
    return s
  }
}
