// Expiry as writes: when a key's time runs out and it leaves the index (met by a read, a
// sweep or compaction), a tombstone is written for it at the namespace's next version, so
// the change feed tells watchers and the version of every change is its own. Also the
// sweep, which finds such keys a few at a time.
import type { KeyDir, SweepCursor } from './keydir.js'
import type { Entry, Namespace } from './parts.js'
import { DEL } from './record.js'
import type { SegmentLog } from './segment-log.js'

/** Expiries the storage refused are tried again this often, and at most this many kept. */
const EXPIRY_RETRY_MS = 1000
const MAX_EXPIRIES_WAITING = 1_000_000

/** What expiry works with: the index, the log's health, and the database's write path. */
export interface ExpiryHost {
  readonly keydir: KeyDir
  readonly log: SegmentLog
  readonly now: () => number
  isClosed(): boolean
  /** Commits the entries as one record (db.ts, commit); throws when the log refuses. */
  write(entries: Entry[]): Promise<unknown>
}

export class Expiries {
  /**
   * Keys that left the index this turn. Their tombstones go as one record, after the turn
   * (never inside another write's checks).
   */
  private due: [Namespace, string][] = []
  private retry: NodeJS.Timeout | undefined = undefined
  /** Which namespace the next sweep starts with, and the last key a namespace's walk saw. */
  private sweepAt = 0
  private sweepFrom = new WeakMap<Namespace, SweepCursor>()

  constructor(private readonly db: ExpiryHost) {}

  /** The key's time ran out and it left the index (KeyDir.onExpired). */
  expired(n: Namespace, key: string): void {
    if (this.due.push([n, key]) === 1) setImmediate(() => this.write())
  }

  private write(): void {
    const due = this.due
    this.due = []
    const db = this.db
    if (db.isClosed()) return
    // A full disk takes a write that fits (the next one simply tries); a failing one none.
    if (db.log.health.state === 'failed') return this.later(due)
    const entries: Entry[] = []
    for (const [n, key] of due) {
      // Dropped, written again, or already noted: nothing to say.
      if (db.keydir.byId.get(n.id) !== n || n.map.has(key) || n.staged.has(key)) continue
      if (entries.some((e) => e.n === n && e.key === key)) continue
      entries.push({
        n,
        key,
        keyLen: Buffer.byteLength(key),
        type: DEL,
        flags: 0,
        bytes: null,
        expiresAt: 0,
      })
    }
    if (entries.length === 0) return
    try {
      db.write(entries).catch(() => this.later(due))
    } catch {
      this.later(due)
    }
  }

  /**
   * Expiries the storage did not take now (a full or failing disk): written once it takes
   * writes again, since watchers wait for their deletes. The key is gone from the index
   * already and expired on disk too, so until then nothing but the event is missing. At
   * most MAX_EXPIRIES_WAITING are kept; past that, the rest lose their event only.
   */
  private later(due: [Namespace, string][]): void {
    if (this.db.isClosed()) return
    for (const d of due) {
      if (this.due.length >= MAX_EXPIRIES_WAITING) break
      this.due.push(d)
    }
    if (this.retry !== undefined || this.due.length === 0) return
    this.retry = setTimeout(() => {
      this.retry = undefined
      if (this.due.length > 0) this.write()
    }, EXPIRY_RETRY_MS)
    this.retry.unref()
  }

  /**
   * Finds keys whose time has run out and lets them go (each an expiry, as above), looking at
   * no more than `budget` keys a call: namespaces are taken in turn, and a large one is walked
   * across calls, each going on after the last key the previous one looked at.
   */
  sweep(budget: number): void {
    const keydir = this.db.keydir
    const all = [...keydir.byId.values()].filter((n) => n.ttl > 0 && !n.building)
    const now = this.db.now()
    for (let k = 0; k < all.length && budget > 0; k++) {
      const n = all[this.sweepAt % all.length]!
      const { gone, looked, next } = keydir.expired(n, this.sweepFrom.get(n), budget, now)
      budget -= looked
      if (next === undefined) {
        this.sweepFrom.delete(n)
        this.sweepAt++
      } else this.sweepFrom.set(n, next)
      for (const key of gone) keydir.liveSlot(n, key)
    }
  }

  /** Stops the retry timer (at close). */
  close(): void {
    clearTimeout(this.retry)
  }
}
