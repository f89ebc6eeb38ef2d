// The change feed of the embedded store. The engine hands every durable group of writes to
// onCommit, in commit order, once reads can see them; here each namespace keeps its recent
// changes in a ring (for watches that resume from a version) and passes them to its live
// subscribers. After a restart the rings start empty, and memory sheds the largest and the
// least recently changed when many namespaces are busy; a resume that reaches back before a
// ring reads that namespace's history back from the log (engine/history.ts), keeping only
// what joins up with the ring without a gap.
import { LRUCache } from 'lru-cache'
import type { Db } from '../../engine/index.js'
import {
  type CommittedChange,
  KEEP_BYTES,
  KEEP_CHANGES,
  type Wanted,
  namespacesChanges,
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
/**
 * A ring read from history this recently is being caught up with by a watch: shedding
 * passes over it while others have changes to give.
 */
const READING_MS = 30_000
/** Namespaces whose log was found not to reach back further (see reach). */
const REACH_NAMESPACES = 100_000
/**
 * How much history one read of the log gathers, about: resumes waiting together share a
 * read, as many as this holds at the size the last reads found, 1 to MAX_BATCH. Each holds
 * what it found (up to its window) until the read ends, and its ring stays whole until its
 * resume has read a page, so memory passes TOTAL_BYTES by about this much then.
 */
const BATCH_BYTES = 256 * 1024 * 1024
const MAX_BATCH = 16
/** How long live changes are gathered before they go to watchers (see deliver). */
const FANOUT_MS = 5
type Listener = (changes: Change[]) => void

/**
 * Whether the feed carries the change: the service's own records (accounts, usage) are
 * stored as msgpack values, not as bytes, and no watch reads them.
 */
const carried = (c: CommittedChange) => c.type === 'delete' || Buffer.isBuffer(c.value)

/** About what a change read back from the log holds in memory. */
function sizeOf(c: CommittedChange): number {
  return 100 + c.key.length + (Buffer.isBuffer(c.value) ? c.value.length : 0)
}

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
  /**
   * Resumes waiting for the log to be read, by namespace, from the lowest version asked for.
   * One read of the log runs at a time, for a batch of them (BATCH_BYTES).
   */
  private waiting = new Map<string, { since: number; done: Promise<void>; resolve: () => void }>()
  private reading = false
  /**
   * The history one namespace's read found lately, in bytes (see BATCH_BYTES). Until a read
   * says otherwise, a whole window: the first read after a restart, when every watch comes
   * back at once, is the one that must not take them all.
   */
  private perNamespace = HISTORY_BYTES
  /** Namespaces dropped while the log is read: what was read of them may be of the old ones. */
  private droppedDuring: Set<string> | null = null
  /**
   * Per namespace, the version below which its log was found to hold no unbroken run: a
   * resume from before it is told the history expired without reading the log again (the
   * window only moves on).
   */
  private reach = new LRUCache<string, number>({ max: REACH_NAMESPACES })
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
    this.reach.delete(ns)
    this.droppedDuring?.add(ns)
  }

  /** The memory all rings hold together (at most the bound, give or take a change). */
  get held(): number {
    return this.total
  }

  async version(ns: string): Promise<number> {
    return this.db.namespaceVersion(ns)
  }

  async read(ns: string, since: number, limit: number): Promise<Change[] | 'expired'> {
    if (since >= this.db.namespaceVersion(ns)) return []
    // The ring does not reach back far enough (a restart emptied it, or memory shed it): the
    // log may. Another read covers a change shed while the first was queued.
    for (let tries = 0; since < this.floorOf(ns); tries++) {
      if (tries === 3 || since < (this.reach.get(ns) ?? Number.NEGATIVE_INFINITY)) return 'expired'
      await this.readLog(ns, since)
    }
    const ring = this.rings.get(ns)
    if (ring === undefined) return [] // reached by writes the feed does not carry
    ring.readAt = Date.now()
    return ring.read(since, limit)
  }

  /** The version the namespace's ring holds every change after. */
  private floorOf(ns: string): number {
    return this.rings.get(ns)?.floor ?? this.db.namespaceVersion(ns)
  }

  /** Reads the namespace's history after `since` from the log, or waits for a read that does. */
  private readLog(ns: string, since: number): Promise<void> {
    const queued = this.waiting.get(ns)
    if (queued !== undefined) {
      queued.since = Math.min(queued.since, since)
      return queued.done
    }
    let resolve!: () => void
    const done = new Promise<void>((r) => {
      resolve = r
    })
    this.waiting.set(ns, { since, done, resolve })
    // Started after the other requests already in hand, so that they share the read.
    if (!this.reading) {
      this.reading = true
      setImmediate(() => void this.readWaiting())
    }
    return done
  }

  /** Reads the log for the resumes waiting, a batch a read, until none wait. */
  private async readWaiting(): Promise<void> {
    while (this.waiting.size > 0) {
      const size = Math.floor(BATCH_BYTES / Math.max(this.perNamespace, 1))
      const batch = [...this.waiting].slice(0, Math.min(MAX_BATCH, Math.max(1, size)))
      for (const [ns] of batch) this.waiting.delete(ns)
      try {
        await this.recover(batch.map(([ns, w]) => ({ ns, since: w.since })))
      } catch {
        // History not found: the resumes read again, or are told it expired.
      }
      // Whatever happened, none waits for ever.
      for (const [, w] of batch) w.resolve()
    }
    this.reading = false
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
   * least recently go whole: a resume from before what is left reads the log again.
   * `keep`, the rings just read back from the log for resumes, are left whole: the bound is
   * passed by at most one read's namespaces' windows, and every read of the log serves each
   * of them a page.
   */
  private shed(keep = new Set<FeedRing>()): void {
    const goal = this.maxBytes * 0.9
    // Rings a watch is catching up with go last, so that it is not sent back to the log.
    const since = Date.now() - READING_MS
    const order = [...this.rings.values()].sort(
      (a, b) => Number(a.readAt > since) - Number(b.readAt > since) || b.memory - a.memory,
    )
    for (const ring of order) {
      if (keep.has(ring)) continue
      const before = ring.memory
      while (this.total - before + ring.memory > goal && ring.length > 1) ring.dropOldest()
      this.total += ring.memory - before
      if (this.total <= goal) return
    }
    // The map's order is the order rings were last used in (touch); those being read go last.
    const whole = [...this.rings].sort(
      ([, a], [, b]) => Number(a.readAt > since) - Number(b.readAt > since),
    )
    for (const [ns, ring] of whole) {
      if (keep.has(ring)) continue
      this.rings.delete(ns)
      this.total -= ring.memory
      if (this.total <= goal) return
    }
  }

  /**
   * Reads the namespaces' history after each one's `since` back from the log, and puts in
   * front of each ring the run of versions that leads up to it without a gap. Where that run
   * stops short of `since` and the whole log was read, the log holds no more: the version it
   * stops at is kept (reach).
   */
  private async recover(wanted: Wanted[]): Promise<void> {
    const dropped = new Set<string>()
    this.droppedDuring = dropped
    let found: Awaited<ReturnType<typeof namespacesChanges>>
    try {
      found = await namespacesChanges(this.db, wanted)
    } catch {
      return
    } finally {
      this.droppedDuring = null
    }
    // What a namespace's history came to, for the size of the next batches.
    let bytes = 0
    for (const f of found.values()) for (const c of f.changes) bytes += sizeOf(c)
    this.perNamespace = (this.perNamespace + bytes / Math.max(1, found.size)) / 2
    // The rings just read stay whole until their resumes have read them.
    const joined = new Set<FeedRing>()
    for (const { ns, since } of wanted) {
      const f = found.get(ns)
      // Dropped meanwhile, and perhaps made again: what was read may be the old one's.
      if (f === undefined || dropped.has(ns) || !this.db.hasNamespace(ns)) continue
      try {
        const ring = this.join(ns, since, f.changes, f.complete)
        if (ring) joined.add(ring)
      } catch {
        // A change that cannot be read back (a damaged value) stops this namespace's run.
      }
    }
    if (this.total > this.maxBytes) this.shed(joined)
  }

  /** Puts in front of the namespace's ring what joins up with it (see recover). */
  private join(
    ns: string,
    since: number,
    found: CommittedChange[],
    complete: boolean,
  ): FeedRing | undefined {
    const versions = new Map<number, CommittedChange>()
    for (const c of found) if (carried(c)) versions.set(c.version, c)
    let ring = this.rings.get(ns)
    const top = ring ? ring.floor : this.db.namespaceVersion(ns)
    const before: RingInput[] = []
    let v = top
    while (v > since && versions.has(v) && before.length < HISTORY_CHANGES) {
      before.push(toChange(versions.get(v)!))
      v--
    }
    if (before.length === 0) return undefined
    // Only a run that was found tells where the log stops: with none, writes may have moved
    // the ring on while the log was read.
    if (v > since && complete) this.reach.set(ns, v)
    before.reverse()
    if (!ring) {
      ring = new FeedRing(top)
      this.rings.set(ns, ring)
      this.total += ring.memory
    }
    const held = ring.memory
    ring.prepend(before)
    ring.floor = v
    ring.readAt = Date.now()
    this.bound(ring)
    this.total += ring.memory - held
    this.touch(ns, ring)
    return ring
  }
}
