// The change feed of the embedded store. The engine hands every durable group of writes to
// onCommit, in commit order, once reads can see them; here each namespace keeps its recent
// changes in a ring (for watches that resume from a version) and passes them to its live
// subscribers. After a restart the rings start empty, and the first resume that reaches back
// before them reads the history back from the log (engine/history.ts), keeping only what
// joins up with the ring without a gap.
import type { Db } from '../../engine/index.js'
import {
  type CommittedChange,
  KEEP_BYTES,
  KEEP_CHANGES,
  recentChanges,
} from '../../engine/index.js'
import { metadataText, valueText } from './envelope.js'
import { FeedRing, type RingInput } from './feed-ring.js'
import type { Change, Feed } from './types.js'

/**
 * The contract's history: the last 10,000 changes of a namespace, or its last 64 MiB, as the
 * engine keeps them across compaction (engine/history-file.ts).
 */
const HISTORY_CHANGES = KEEP_CHANGES
const HISTORY_BYTES = KEEP_BYTES
/** All namespaces' rings together, in memory held; past it the largest give up changes. */
const TOTAL_BYTES = 128 * 1024 * 1024
/** How much of the log history is read back from, when a watch reaches back past a ring. */
const RECOVER_BYTES = 128 * 1024 * 1024
/** The log is read for history at most this often (each read is up to RECOVER_BYTES). */
const RECOVER_EVERY_MS = 10_000
/** How long live changes are gathered before they go to watchers (see deliver). */
const FANOUT_MS = 5
type Listener = (changes: Change[]) => void

/**
 * Whether the feed carries the change: the service's own records (accounts, usage) are
 * stored as msgpack values, not as bytes, and no watch reads them.
 */
const carried = (c: CommittedChange) => c.type === 'delete' || Buffer.isBuffer(c.value)

/** A committed change as the feed hands it out (and keeps it): value and metadata apart. */
function toChange(c: CommittedChange): Change & RingInput {
  if (c.type === 'delete') return { type: 'delete', key: c.key, version: c.version }
  const stored = c.value as Buffer
  const out: Change = { type: 'put', key: c.key, version: c.version, value: valueText(stored) }
  if (c.expiresAt !== undefined) out.expiresAt = c.expiresAt
  const meta = metadataText(stored)
  if (meta !== undefined) out.metadata = meta
  return out
}

export class EmbeddedFeed implements Feed {
  private rings = new Map<string, FeedRing>()
  private listeners = new Map<string, Set<Listener>>()
  private total = 0
  private recovering: Promise<void> | null = null
  private recoveredAt = Number.NEGATIVE_INFINITY
  private stop: () => void

  constructor(
    private db: Db,
    /** The bound on all rings' memory (a test sets a small one). */
    private maxBytes = TOTAL_BYTES,
  ) {
    this.stop = db.onCommit((changes) => this.committed(changes))
  }

  close(): void {
    this.stop()
    if (this.timer) clearTimeout(this.timer)
  }

  /** A dropped namespace's history goes with it (a new one of that name starts over). */
  dropped(ns: string): void {
    const ring = this.rings.get(ns)
    if (ring) this.total -= ring.memory
    this.rings.delete(ns)
  }

  /** The memory all rings hold together (at most the bound, give or take a change). */
  get held(): number {
    return this.total
  }

  async version(ns: string): Promise<number> {
    return this.db.namespaceVersion(ns)
  }

  async read(ns: string, since: number, limit: number): Promise<Change[] | 'expired'> {
    const current = this.db.namespaceVersion(ns)
    if (since >= current) return []
    if (since < (this.rings.get(ns)?.floor ?? current)) {
      // The ring does not reach back far enough (a restart emptied it, or memory trimmed it):
      // the log may, and is read again now and then, never by many watches at once.
      if (this.recovering === null && Date.now() - this.recoveredAt >= RECOVER_EVERY_MS) {
        this.recoveredAt = Date.now()
        this.recovering = this.recover(ns).finally(() => {
          this.recovering = null
        })
      }
      if (this.recovering) await this.recovering
      if (since < (this.rings.get(ns)?.floor ?? this.db.namespaceVersion(ns))) return 'expired'
    }
    return this.rings.get(ns)!.read(since, limit)
  }

  subscribe(ns: string, listener: Listener): () => void {
    let set = this.listeners.get(ns)
    if (!set) {
      set = new Set()
      this.listeners.set(ns, set)
    }
    set.add(listener)
    return () => {
      set.delete(listener)
      if (set.size === 0 && this.listeners.get(ns) === set) this.listeners.delete(ns)
    }
  }

  private committed(changes: CommittedChange[]): void {
    let ns = ''
    let batch: Change[] = []
    let watched = false
    for (const c of changes) {
      if (!carried(c)) continue
      if (c.ns !== ns) {
        this.deliver(ns, batch)
        ns = c.ns
        batch = []
        watched = this.listeners.has(ns)
      }
      const ch = toChange(c)
      this.keep(ns, ch)
      // Unwatched, the change object dies young: the ring keeps a copy of its bytes.
      if (watched) batch.push(ch)
    }
    this.deliver(ns, batch)
  }

  /**
   * Live changes go to subscribers a few milliseconds after they are durable, gathered: the
   * writes' own answers leave first, and a watcher gets the changes of several groups in one
   * write. Each delivery to a watcher is a socket write, so with many watchers of a busy
   * namespace the writes, not the changes, are what costs (FANOUT_MS trades that much latency
   * for it). Order is kept.
   */
  private outbox = new Map<string, Change[]>()
  private timer: NodeJS.Timeout | null = null

  private deliver(ns: string, batch: Change[]): void {
    if (batch.length === 0 || !this.listeners.has(ns)) return
    const held = this.outbox.get(ns)
    if (held) held.push(...batch)
    else this.outbox.set(ns, batch)
    this.timer ??= setTimeout(() => this.send(), FANOUT_MS)
  }

  private send(): void {
    this.timer = null
    const due = this.outbox
    this.outbox = new Map()
    for (const [ns, batch] of due) {
      const set = this.listeners.get(ns)
      if (set) for (const l of set) l(batch)
    }
  }

  private keep(ns: string, c: RingInput): void {
    let ring = this.rings.get(ns)
    if (!ring) {
      // Every durable change since open passed through here, so this one follows the last
      // version open found (a gap is a write that failed, not a change).
      ring = new FeedRing(c.version - 1)
      this.total += ring.memory
    }
    this.touch(ns, ring)
    const before = ring.memory
    ring.push(c)
    this.bound(ring)
    this.total += ring.memory - before
    if (this.total > this.maxBytes) this.shed()
  }

  /** Puts the ring last in the map, whose order shed() takes as the order rings were used. */
  private touch(ns: string, ring: FeedRing): void {
    this.rings.delete(ns)
    this.rings.set(ns, ring)
  }

  /** The contract's history and no more: the oldest changes go past either bound. */
  private bound(ring: FeedRing): void {
    while (ring.length > HISTORY_CHANGES || (ring.bytes > HISTORY_BYTES && ring.length > 1))
      ring.dropOldest()
  }

  /**
   * Past the total, the largest rings give up their oldest changes first. If rings of one
   * change each still hold too much (many namespaces, each holding a little), those changed
   * least recently go whole: a resume from before what is left reads the log, or is told
   * the history expired.
   */
  private shed(): void {
    const goal = this.maxBytes * 0.9
    for (const ring of [...this.rings.values()].sort((a, b) => b.memory - a.memory)) {
      const before = ring.memory
      while (this.total - before + ring.memory > goal && ring.length > 1) ring.dropOldest()
      this.total += ring.memory - before
      if (this.total <= goal) return
    }
    // The map's order is the order rings were last used in (touch).
    for (const [ns, ring] of this.rings) {
      this.rings.delete(ns)
      this.total -= ring.memory
      if (this.total <= goal) return
    }
  }

  /**
   * Reads recent history back from the log (once per process) and puts in front of each ring
   * the run of versions that leads up to it without a gap.
   */
  private async recover(wanted: string): Promise<void> {
    let found: CommittedChange[]
    try {
      found = await recentChanges(this.db, RECOVER_BYTES)
    } catch {
      return
    }
    const byNs = new Map<string, Map<number, CommittedChange>>()
    for (const c of found) {
      if (!carried(c)) continue
      let m = byNs.get(c.ns)
      if (!m) {
        m = new Map()
        byNs.set(c.ns, m)
      }
      m.set(c.version, c)
    }
    for (const [ns, versions] of byNs) {
      let ring = this.rings.get(ns)
      const top = ring ? ring.floor : this.db.namespaceVersion(ns)
      const before: RingInput[] = []
      let v = top
      while (v > 0 && versions.has(v) && before.length < HISTORY_CHANGES) {
        before.push(toChange(versions.get(v)!))
        v--
      }
      if (before.length === 0) continue
      before.reverse()
      if (!ring) {
        ring = new FeedRing(top)
        this.rings.set(ns, ring)
        this.total += ring.memory
      }
      const held = ring.memory
      ring.prepend(before)
      ring.floor = v
      this.bound(ring)
      this.total += ring.memory - held
    }
    // The namespace asked about goes last, so a shed that follows takes the others first.
    const ring = this.rings.get(wanted)
    if (ring) this.touch(wanted, ring)
    if (this.total > this.maxBytes) this.shed()
  }
}
