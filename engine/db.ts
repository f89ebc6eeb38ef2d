// The database: it coordinates. Namespaces, the write path with group commit, and reads are
// here; argument rules (arguments.ts), batches (batch.ts), staged writes (staged.ts), entry
// reads (entry-reads.ts), expiry (expiry.ts), upkeep of compaction and checkpoints
// (upkeep.ts) and backup (backup.ts) are in rooms of their own. engine/FORMAT.md describes
// the files.
import {
  checkBounds,
  checkDelta,
  checkHistorySetting,
  checkIfVersion,
  checkKey,
  checkListOptions,
  checkName,
  conflictOf,
  expiry,
  keyBytes,
} from './arguments.js'
import { copyDatabase } from './backup.js'
import { batchEntries } from './batch.js'
import type { CommittedChange, DbCore } from './db-core.js'
import { EngineError, fail } from './errors.js'
import { Expiries } from './expiry.js'
import { addNamespace, infoOf, removeNamespace } from './namespace-changes.js'
import type { NamespaceTable } from './namespaces-file.js'
import {
  type Entry,
  type EntryAt,
  type Namespace,
  type Segment,
  type Staged,
  diskUse,
  noteVersion,
} from './parts.js'
import { DEL, ENTRY_HEADER, PUT, REC_HEADER, sealEntry, sealRecord } from './record.js'
import { type Group, SegmentLog } from './segment-log.js'
import { KeyDir } from './keydir.js'
import { afterStaged, latestExpiry, latestVersion, stagedValue, unstage } from './staged.js'
import { Upkeep } from './upkeep.js'
import { ValueCache } from './value-cache.js'
import { EntryReads } from './entry-reads.js'
import { Windows } from './windows.js'
import type {
  BatchOp,
  BatchOptions,
  DeleteOptions,
  Durability,
  EngineHealth,
  EngineStats,
  GetResult,
  HistoryOptions,
  HistoryPoint,
  HistorySetting,
  HistoryVersion,
  ListAtOptions,
  ListAtResult,
  ListOptions,
  ListResult,
  NamespaceInfo,
  OpenOptions,
  PutOptions,
  PutResult,
} from './types.js'
import { encodeValue } from './values.js'

export type CommitListener = (changes: CommittedChange[]) => void

function committed(n: Namespace, st: Staged): CommittedChange {
  if (st.type !== PUT) return { ns: n.name, type: 'delete', key: st.key, version: st.version }
  const value = stagedValue(st)
  const c: CommittedChange = { ns: n.name, type: 'put', key: st.key, version: st.version, value }
  if (st.expiresAt !== 0) c.expiresAt = st.expiresAt
  return c
}

/** What repair kept and left out: a line per damaged key where one is legible, else per span. */
export interface RepairReport {
  /** Live and superseded records read and kept. */
  kept: number
  dropped: { file: string; offset: number; namespace?: string; key?: string; reason: string }[]
}

export interface DbConfig {
  dir: string
  options: OpenOptions
  release: () => void
  /** Whether the directory's lock is still this process's (lock.ts); why not, when not. */
  checkLock?: () => string | undefined
}

/** How often the lock is looked at while the database is open. */
const LOCK_CHECK_MS = 2000

export class Db implements DbCore {
  readonly dir: string
  readonly durability: Durability
  readonly segmentBytes: number
  readonly options: OpenOptions
  /** What `repair: true` left out when opening; empty when nothing was damaged. */
  repairReport: RepairReport = { kept: 0, dropped: [] }

  /** Every live key and where its record is (keydir.ts). */
  readonly keydir: KeyDir
  /** The engine's clock (OpenOptions.clock): expiry, commit times, history windows. */
  readonly now: () => number
  /** The namespaces' history windows (windows.ts). */
  readonly windows: Windows
  table: NamespaceTable = { nextId: 1, list: [] }
  readonly log: SegmentLog
  /**
   * Records committed, database-wide: it names segments (their header's baseVersion) and is
   * never shown to anyone. Entries carry their namespace's own version (Namespace.version).
   */
  version = 0
  /** `version` as of the last group made durable (a checkpoint records it). */
  appliedVersion = 0
  /** The namespaces a group being applied wrote (reused from group to group). */
  private readonly touched = new Set<Namespace>()
  /** Listeners for committed changes (onCommit). */
  private commitListeners: CommitListener[] = []
  /** Counts compaction passes started: a checkpoint walk that sees it change gives up. */
  compactionEpoch = 0
  /** How the last open rebuilt the index: from a checkpoint and the log after it, or the log. */
  openedFrom: 'checkpoint' | 'log' = 'log'

  private closed = false
  private release: () => void
  /** Reads of what the index points at, through the value cache (entry-reads.ts). */
  private readonly reads: EntryReads
  private timer: NodeJS.Timeout | null = null
  private lockTimer: NodeJS.Timeout | undefined = undefined
  private checkLock: (() => string | undefined) | undefined

  /** Open is done: upkeep may fold what a log replay left as strings (fold.ts). */
  opened(): void {
    this.upkeep.opened()
  }

  /** Starts looking at the lock (lock.ts), once the database is open. */
  watchLock(): void {
    const checkLock = this.checkLock
    if (checkLock === undefined || this.lockTimer !== undefined) return
    this.lockTimer = setInterval(() => {
      const lost = checkLock()
      if (lost === undefined) return
      this.log.loseLock(lost)
      clearInterval(this.lockTimer)
    }, LOCK_CHECK_MS)
    this.lockTimer.unref()
  }
  /**
   * A checkpoint on disk holds the whole index as of the last one written or loaded (open
   * loaded one and replayed nothing after it, or this process wrote one): close need not
   * write another when nothing was written since.
   */
  checkpointCurrent = false
  /** When compaction passes and checkpoints run (upkeep.ts). */
  private readonly upkeep: Upkeep
  /** Tombstones for keys whose time ran out, and the sweep (expiry.ts). */
  private readonly expiries: Expiries
  /** Set when compaction met a damaged record: it stops until the directory is repaired. */
  damaged: EngineError | null = null
  private counters = { compactions: 0, compactedBytes: 0 }
  constructor(cfg: DbConfig) {
    this.dir = cfg.dir
    this.options = cfg.options
    this.release = cfg.release
    this.durability = cfg.options.durability ?? 'always'
    this.segmentBytes = Math.min(cfg.options.segmentBytes ?? 64 * 1024 * 1024, 2 ** 31)
    const cacheBytes = cfg.options.cacheBytes ?? 64 * 1024 * 1024
    const cache = cacheBytes > 0 ? new ValueCache(cacheBytes) : null
    this.log = new SegmentLog(this.dir, this.durability, this.segmentBytes, {
      applied: (g) => this.applyGroup(g),
      dropped: (g) => {
        for (const st of g.staged) unstage(this.keydir, st)
      },
      idle: () => this.upkeep.idle(),
    })
    this.log.version = () => this.version
    this.log.versions = () => {
      const out: [number, number][] = []
      for (const n of this.keydir.byId.values()) out.push([n.id, n.version])
      return out
    }
    this.now = cfg.options.clock ?? Date.now
    this.keydir = new KeyDir(this.log.segments, cache, this.now)
    this.reads = new EntryReads(this.dir, this.log.segments, this.keydir, cache)
    this.upkeep = new Upkeep(this)
    this.expiries = new Expiries({
      keydir: this.keydir,
      log: this.log,
      now: this.now,
      isClosed: () => this.closed,
      write: (entries) => this.commit(entries, () => undefined),
    })
    this.keydir.onExpired = (n, key) => this.expiries.expired(n, key)
    this.windows = new Windows(this, this.now)
    this.keydir.superseding = (n, key, slot) => {
      if (this.windows.byId.size > 0) this.windows.superseding(n, key, slot)
    }
    this.checkLock = cfg.checkLock
    if (this.durability === 'interval') {
      this.timer = setInterval(
        () => void this.log.syncDirty().catch(() => {}),
        cfg.options.syncIntervalMs ?? 100,
      )
      this.timer.unref()
    }
  }

  // The log's files, for recovery and compaction.
  get segments(): Map<number, Segment> {
    return this.log.segments
  }
  get active(): Segment {
    return this.log.active
  }
  rotate(): Segment {
    return this.log.rotate()
  }

  // ---- namespaces ----

  async createNamespace(ns: string): Promise<boolean> {
    this.checkOpen()
    checkName(ns)
    return addNamespace(this, ns)
  }

  async dropNamespace(ns: string): Promise<boolean> {
    this.checkOpen()
    const n = removeNamespace(this, ns)
    if (n) this.windows.drop(n.id)
    return n !== undefined
  }

  hasNamespace(ns: string): boolean {
    return this.keydir.byName.has(ns)
  }

  namespaces(): NamespaceInfo[] {
    return [...this.keydir.byName.values()].map((n) => infoOf(n, this.windows.historyBytes(n.id)))
  }

  namespaceStats(ns: string): NamespaceInfo | undefined {
    const n = this.keydir.byName.get(ns)
    return n ? infoOf(n, this.windows.historyBytes(n.id)) : undefined
  }

  // ---- history ----

  /**
   * Sets how long the namespace keeps every version its writes supersede (and its
   * tombstones), and at most how many bytes of them; `{ seconds: 0 }` or `{ bytes: 0 }` stops
   * keeping them and forgets what was kept. Kept in the directory (WINDOWS) across opens.
   * History begins when the window is first set.
   */
  setHistory(ns: string, setting: HistorySetting): void {
    this.checkOpen()
    const n = this.ns(ns)
    checkHistorySetting(setting)
    this.log.checkWritable()
    this.windows.set(n, { seconds: setting.seconds, bytes: setting.bytes })
  }

  /** The namespace's history window, undefined when it keeps none. */
  getHistory(ns: string): HistorySetting | undefined {
    this.checkOpen()
    return this.windows.get(this.ns(ns).id)
  }

  /** The oldest point still readable: its version and time (ms since the Unix epoch). */
  historyFrom(ns: string): { version: number; at: number } {
    this.checkOpen()
    return this.windows.from(this.ns(ns))
  }

  /**
   * The key as it was at the point: the state after that version, or after every write
   * committed at or before that time. HISTORY_EXPIRED for a point older than historyFrom;
   * INVALID_POINT for a malformed one, a time in the future or a version above the
   * namespace's.
   */
  getAt(ns: string, key: string, point: HistoryPoint): GetResult | undefined {
    this.checkOpen()
    const n = this.ns(ns)
    checkKey(key)
    return this.windows.getAt(n, key, this.windows.resolve(n, point))
  }

  /** A page of the namespace as it was at the point (see getAt), in UTF-8 byte order. */
  listAt(ns: string, opts: ListAtOptions, point: HistoryPoint): Promise<ListAtResult> {
    try {
      this.checkOpen()
      const n = this.ns(ns)
      const o = opts ?? {}
      checkBounds([o.prefix, o.start, o.end, o.after])
      return this.windows.listAt(n, o, this.windows.resolve(n, point))
    } catch (err) {
      return Promise.reject(err)
    }
  }

  /** The key's versions within the history, newest first (its live one included). */
  history(ns: string, key: string, opts?: HistoryOptions): HistoryVersion[] {
    this.checkOpen()
    const n = this.ns(ns)
    checkKey(key)
    return this.windows.history(n, key, opts ?? {})
  }

  /** The namespace, for the history windows and batches (NAMESPACE_NOT_FOUND when none). */
  nsOf(name: string): Namespace {
    return this.ns(name)
  }

  /** The entry bytes a live slot points at. */
  entryOf(slot: number): Buffer {
    return this.reads.entryOf(slot)
  }

  syncHistory(): Promise<void> {
    return this.windows.syncAsync()
  }

  historyRecovering(
    nsId: number,
    version: number,
    slot: number | undefined,
    tomb: EntryAt | undefined,
  ): void {
    if (this.windows.byId.size > 0) this.windows.recovering(nsId, version, slot, tomb)
  }

  historyRecoveringLate(nsId: number, current: number, entry: EntryAt): void {
    if (this.windows.byId.size > 0) this.windows.recoveringLate(nsId, current, entry)
  }

  private ns(name: string): Namespace {
    const n = this.keydir.byName.get(name)
    if (!n) {
      if (typeof name !== 'string') fail('INVALID_ARGUMENT', 'a namespace name is a string')
      throw new EngineError(
        'NAMESPACE_NOT_FOUND',
        `namespace ${JSON.stringify(name)} does not exist`,
      )
    }
    return n
  }

  // ---- writes ----

  put(ns: string, key: string, value: unknown, opts?: PutOptions): Promise<PutResult> {
    try {
      this.checkOpen()
      const n = this.ns(ns)
      const keyLen = keyBytes(key)
      const expiresAt = expiry(this.now(), opts?.ttlMs, opts?.expiresAt)
      const { flags, bytes } = encodeValue(value)
      const cur = this.latest(n, key)
      const ifVersion = opts?.ifVersion
      if (ifVersion !== undefined) {
        checkIfVersion(ifVersion)
        const refused = conflictOf(key, cur, ifVersion)
        if (refused) return afterStaged<PutResult>(this.log, [[n, key]], refused)
      }
      const e: Entry = { n, key, keyLen, type: PUT, flags, bytes, expiresAt }
      return this.commit(e, (version) => ({ version, created: cur < 0 }))
    } catch (err) {
      return Promise.reject(err)
    }
  }

  /**
   * put() without TTL or condition for a caller that wants only the write's outcome (the Level
   * database): it resolves once the write is acknowledged, with the promise its group's
   * writes share, and looks up no current version.
   */
  putAck(ns: string, key: string, value: unknown): Promise<void> {
    try {
      this.checkOpen()
      const n = this.ns(ns)
      const keyLen = keyBytes(key)
      const { flags, bytes } = encodeValue(value)
      return this.commit({ n, key, keyLen, type: PUT, flags, bytes, expiresAt: 0 }, null)
    } catch (err) {
      return Promise.reject(err)
    }
  }

  delete(ns: string, key: string, opts?: DeleteOptions): Promise<boolean> {
    try {
      this.checkOpen()
      const n = this.ns(ns)
      const keyLen = keyBytes(key)
      const cur = this.latest(n, key)
      const refused =
        opts?.ifVersion === undefined ? undefined : conflictOf(key, cur, opts.ifVersion)
      if (refused) return afterStaged<boolean>(this.log, [[n, key]], refused)
      if (cur < 0) return afterStaged<boolean>(this.log, [[n, key]], false)
      const e: Entry = { n, key, keyLen, type: DEL, flags: 0, bytes: null, expiresAt: 0 }
      return this.commit(e, () => true)
    } catch (err) {
      return Promise.reject(err)
    }
  }

  batch(ops: BatchOp[], opts?: BatchOptions): Promise<{ version: number }> {
    try {
      this.checkOpen()
      if (!Array.isArray(ops)) fail('INVALID_ARGUMENT', 'batch takes an array of operations')
      // Everything is checked before anything is staged: all or nothing.
      const { entries, skipped } = batchEntries(ops, this)
      const checked: [Namespace, string][] = []
      for (const c of opts?.checks ?? []) {
        const n = this.ns(c.ns)
        keyBytes(c.key)
        checked.push([n, c.key])
        const cur = this.latest(n, c.key)
        const current = cur < 0 ? null : cur
        if (current !== c.version) {
          const refused = new EngineError(
            'CONFLICT',
            `check failed on ${c.ns}/${c.key}: version is ${current}, expected ${c.version}`,
          )
          return afterStaged<{ version: number }>(this.log, checked, refused)
        }
      }
      if (entries.length === 0) {
        const first = opts?.checks?.[0]
        const version = first ? this.ns(first.ns).applied : 0
        return afterStaged<{ version: number }>(this.log, [...checked, ...skipped], { version })
      }
      return this.commit(entries, (version) => ({ version }))
    } catch (err) {
      return Promise.reject(err)
    }
  }

  /** batch() without checks for a caller that wants only its outcome, as putAck. */
  batchAck(ops: BatchOp[]): Promise<void> {
    try {
      this.checkOpen()
      if (!Array.isArray(ops)) fail('INVALID_ARGUMENT', 'batch takes an array of operations')
      const { entries, skipped } = batchEntries(ops, this)
      if (entries.length === 0) return afterStaged<void>(this.log, skipped, undefined)
      return this.commit(entries, null)
    } catch (err) {
      return Promise.reject(err)
    }
  }

  increment(ns: string, key: string, delta: number): Promise<number> {
    try {
      this.checkOpen()
      const n = this.ns(ns)
      const keyLen = keyBytes(key)
      checkDelta(delta)
      let current = 0
      let expiresAt = 0
      if (this.latest(n, key) >= 0) {
        const v = this.latestValue(n, key)
        if (typeof v !== 'number') fail('NOT_A_NUMBER', `${key} does not hold a number`)
        current = v as number
        expiresAt = latestExpiry(this.keydir, n, key)
      }
      const next = current + delta
      if (!Number.isFinite(next)) fail('INVALID_ARGUMENT', 'the result is not a finite number')
      const { flags, bytes } = encodeValue(next)
      const e: Entry = { n, key, keyLen, type: PUT, flags, bytes, expiresAt }
      return this.commit(e, () => next)
    } catch (err) {
      return Promise.reject(err)
    }
  }

  /**
   * The one write path: each entry gets its namespace's next version (consecutive within a
   * record), they are staged as one record in the current group, and become visible when the
   * group is durable (applyGroup). `result` is given the last version. Until then a
   * staged entry is seen only by the checks of later writes (latest), so conditional writes
   * stay exact with writes in flight, while reads never see what may yet fail. Without
   * `result` the answer is the group's own promise.
   */
  private commit<T>(entries: Entry | Entry[], result: (version: number) => T): Promise<T>
  private commit(entries: Entry | Entry[], result: null): Promise<void>
  private commit<T>(
    entries: Entry | Entry[],
    result: ((version: number) => T) | null,
  ): Promise<unknown> {
    this.log.checkWritable()
    this.version++
    const one = !Array.isArray(entries)
    let total = REC_HEADER
    if (one) total += ENTRY_HEADER + entries.keyLen + (entries.bytes ? entries.bytes.length : 0)
    else for (const e of entries) total += ENTRY_HEADER + e.keyLen + (e.bytes ? e.bytes.length : 0)
    const g = this.log.reserve(total)
    const at = g.len
    let version: number
    if (one) {
      version = ++entries.n.version
      this.stage(g, at + REC_HEADER, entries, version)
    } else {
      let p = at + REC_HEADER
      version = 0
      for (const e of entries) {
        version = ++e.n.version
        p += this.stage(g, p, e, version)
      }
    }
    const count = one ? 1 : entries.length
    sealRecord(g.buf, at, total - REC_HEADER, count)
    g.len = at + total
    this.log.counters.writes += count
    return result === null ? this.log.wrote(g) : this.log.await(g, result(version))
  }

  /**
   * Resolves once the writes still staged for these keys are durable, and rejects with their
   * error if they fail: for an answer decided against them elsewhere (a transaction planned
   * on the index, server/store/embedded-tx.ts), as afterStaged does here.
   */
  settledFor(ns: string, keys: string[]): Promise<void> {
    const n = this.keydir.byName.get(ns)
    if (n === undefined || n.staged.size === 0) return Promise.resolve()
    return afterStaged<void>(
      this.log,
      keys.map((k) => [n, k]),
      undefined,
    )
  }

  /** Lays one entry out at `p` in the group and stages it; returns its length. */
  private stage(g: Group, p: number, e: Entry, version: number): number {
    const b = g.buf
    b.write(e.key, p + ENTRY_HEADER, e.keyLen, 'utf8')
    const valueLen = e.bytes ? e.bytes.length : 0
    if (e.bytes) b.set(e.bytes, p + ENTRY_HEADER + e.keyLen)
    sealEntry(b, p, e.type, e.flags, e.keyLen, e.n.id, version, e.expiresAt, valueLen)
    const len = ENTRY_HEADER + e.keyLen + valueLen
    const st: Staged = {
      group: g,
      nsId: e.n.id,
      key: e.key,
      type: e.type,
      version,
      expiresAt: e.expiresAt,
      at: p,
      len,
    }
    g.staged.push(st)
    e.n.staged.set(e.key, st)
    return len
  }

  /** A durable group's entries become visible: index, hint, value cache. */
  private applyGroup(g: Group): void {
    const seg = g.seg
    const b = g.buf
    this.upkeep.wrote(g.len)
    this.appliedVersion = this.version
    const changes: CommittedChange[] | null = this.commitListeners.length > 0 ? [] : null
    const windows = this.windows
    windows.begin()
    const touched = this.touched
    touched.clear()
    for (const st of g.staged) {
      noteVersion(seg, st.nsId, st.version)
      seg.hint?.add(b, st.at, g.base + st.at)
      const n = this.keydir.byId.get(st.nsId)
      if (!n) continue // dropped meanwhile
      if (n.staged.get(st.key) === st) n.staged.delete(st.key)
      if (st.version > n.applied) n.applied = st.version
      if (changes !== null) changes.push(committed(n, st))
      touched.add(n)
      if (st.type === PUT) {
        const live = this.keydir.setLive(
          n,
          st.key,
          seg,
          g.base + st.at,
          st.len,
          st.version,
          st.expiresAt,
        )
        // What was just written is what is most likely read next (sessions, caches): keep it.
        this.reads.cache?.set(live, b, st.at, st.len)
        windows.entry(n.id, st.key, null)
      } else {
        this.keydir.remove(n, st.key)
        windows.entry(n.id, st.key, b, st.at, st.len)
      }
    }
    windows.end(touched)
    if (changes !== null && changes.length > 0)
      for (const l of this.commitListeners) {
        try {
          l(changes)
        } catch {
          // A listener's failure is its own; the write is durable and stays.
        }
      }
  }

  /**
   * Calls `listener` with each durable group's changes, in commit order, once they are
   * visible to reads: the change feed's source (a watch, a replica). Returns the function that
   * stops it. The values are copies the listener may keep.
   */
  onCommit(listener: CommitListener): () => void {
    this.commitListeners.push(listener)
    return () => {
      this.commitListeners = this.commitListeners.filter((l) => l !== listener)
    }
  }

  /**
   * Finds keys whose time has run out and lets them go, each an expiry written as a
   * tombstone (expiry.ts), looking at no more than `budget` keys a call.
   */
  sweepExpired(budget: number): void {
    this.checkOpen()
    this.expiries.sweep(budget)
  }

  /** The namespace's version: that of its last durable write (0 when it has none). */
  namespaceVersion(ns: string): number {
    this.checkOpen()
    return this.ns(ns).applied
  }

  /** The version a write must be checked against (staged.ts): -1 when the key is missing. */
  latest(n: Namespace, key: string): number {
    return latestVersion(this.keydir, n, key, this.now)
  }

  private latestValue(n: Namespace, key: string): unknown {
    const st = n.staged.get(key)
    return st ? stagedValue(st) : this.readValue(this.keydir.liveSlot(n, key))
  }

  /**
   * The key as the next write will find it: its newest staged entry, else the index. Only for
   * planning a write, which is acknowledged after every write staged before it: never answer
   * a read with it (a staged write may yet fail).
   */
  latestNow(ns: string, key: string): GetResult | undefined {
    this.checkOpen()
    const n = this.ns(ns)
    const version = this.latest(n, key)
    if (version < 0) return undefined
    const value = this.latestValue(n, key)
    const exp = latestExpiry(this.keydir, n, key)
    return exp !== 0 ? { value, version, expiresAt: exp } : { value, version }
  }

  // ---- reads ----

  get(ns: string, key: string): Promise<GetResult | undefined> {
    try {
      return Promise.resolve(this.getNow(ns, key))
    } catch (err) {
      return Promise.reject(err)
    }
  }

  /** get(), answered synchronously: the index is in memory and a value is one pread away. */
  getNow(ns: string, key: string): GetResult | undefined {
    this.checkOpen()
    const n = this.ns(ns)
    checkKey(key)
    const slot = this.keydir.liveSlot(n, key)
    if (slot < 0) return undefined
    const value = this.readValue(slot)
    const exp = this.keydir.slots.expires[slot]!
    return exp !== 0
      ? { value, version: this.keydir.slots.version[slot]!, expiresAt: exp }
      : { value, version: this.keydir.slots.version[slot]! }
  }

  /**
   * The values of keys a listing gave, in their order (undefined for a key gone since), for a
   * reader walking a range (the Level iterator): the namespace is looked up once for them all,
   * and they are read as a scan, leaving the value cache as it was.
   */
  scanValuesNow(ns: string, keys: string[]): unknown[] {
    this.checkOpen()
    const n = this.ns(ns)
    const out: unknown[] = new Array(keys.length)
    for (let i = 0; i < keys.length; i++) {
      const slot = this.keydir.liveSlot(n, keys[i]!)
      out[i] = slot < 0 ? undefined : this.reads.readValue(slot, false)
    }
    return out
  }

  stat(
    ns: string,
    key: string,
  ): Promise<{ version: number; bytes: number; expiresAt?: number } | undefined> {
    try {
      this.checkOpen()
      const n = this.ns(ns)
      checkKey(key)
      return Promise.resolve(this.reads.statOf(this.keydir.liveSlot(n, key)))
    } catch (err) {
      return Promise.reject(err)
    }
  }

  /** The value a live slot points at (entry-reads.ts). */
  readValue(slot: number): unknown {
    return this.reads.readValue(slot)
  }

  /** A pass's outputs, `bytes` of them, replaced its inputs in the manifest. */
  noteCompacted(bytes: number): void {
    this.counters.compactedBytes += bytes
    this.counters.compactions++
    // The checkpoint names segments the pass replaced.
    this.upkeep.compacted()
  }

  /** Counts a read (or compaction) that met a damaged record. */
  noteCorrupt(): void {
    this.reads.counters.corruptReads++
  }

  /** The entry's bytes, checked against its checksum: damage is named, never returned. */
  readEntry(segId: number, off: number, len: number): Buffer {
    return this.reads.readEntry(segId, off, len)
  }

  list(ns: string, opts?: ListOptions): Promise<ListResult> {
    try {
      const res = this.listNow(ns, opts)
      if (res !== undefined) return Promise.resolve(res)
      // A large namespace's sorted list may still be in the making just after open.
      return this.ns(ns).building!.then(() => this.list(ns, opts))
    } catch (err) {
      return Promise.reject(err)
    }
  }

  /**
   * list(), answered synchronously (the index is in memory); undefined while the namespace's
   * sorted list is still being made after open, when only list() can wait for it. Throws
   * what list() would reject with.
   */
  listNow(ns: string, opts?: ListOptions): ListResult | undefined {
    this.checkOpen()
    const n = this.ns(ns)
    if (n.building) return undefined
    const prefix = opts?.prefix ?? ''
    const after = opts?.after
    const limit = opts?.limit ?? 1000
    checkListOptions(prefix, after, limit)
    const res = this.keydir.scan(n, prefix, after, limit, opts?.reverse ? -1 : 1, !!opts?.json)
    res.version = n.applied
    return res
  }

  // ---- durability ----

  /** Resolves once every write accepted so far is on disk. */
  async flush(): Promise<void> {
    this.checkOpen()
    await this.log.drain()
    await this.log.syncDirty()
  }

  drain(): Promise<void> {
    return this.log.drain()
  }

  health(): EngineHealth {
    return this.log.health
  }

  // ---- compaction and checkpoints (upkeep.ts) ----

  /**
   * Reclaims the space of overwritten, deleted and expired data. By default every sealed
   * segment is rewritten (what an operator asks for); `full: false` rewrites only those with
   * most garbage, as the automatic passes do.
   */
  compact(opts?: { full?: boolean }): Promise<void> {
    if (this.log.lockLost !== undefined)
      return Promise.reject(new EngineError('IO_ERROR', this.log.lockLost))
    try {
      this.checkOpen()
    } catch (err) {
      return Promise.reject(err)
    }
    return this.upkeep.compact(opts?.full !== false)
  }

  isCompacting(): boolean {
    return this.upkeep.isCompacting()
  }

  /** Resolves once no compaction pass is running (a pass may start again at any write). */
  compactionSettled(): Promise<void> {
    return this.upkeep.compactionSettled()
  }

  /**
   * Writes a checkpoint of the index now (after the one running, if any), so the next open
   * replays only what is written after it. Resolves false when it was not written (a
   * compaction started meanwhile, the disk refused): nothing else depends on it.
   */
  async checkpoint(): Promise<boolean> {
    this.checkOpen()
    return this.upkeep.checkpoint()
  }

  /** Counts a checkpoint written, and its size. */
  noteCheckpoint(bytes: number): void {
    this.upkeep.noteCheckpoint(bytes)
  }

  /** Checkpoints written since open, and the size of the last. */
  checkpointStats(): { checkpoints: number; checkpointBytes: number } {
    return this.upkeep.checkpointStats()
  }

  /**
   * Resolves once the index is complete after open: every namespace's sorted list built, the
   * keys a log replay left as strings folded into bases, and every base hashed. Reads and writes never wait for this; it is for warming up
   * and for measuring the index.
   */
  async indexReady(): Promise<void> {
    for (const n of this.keydir.byName.values()) await n.building
    // A fold makes a new base, which is hashed before it is taken.
    await this.upkeep.foldNow()
    for (const n of this.keydir.byName.values()) await n.map.base?.hashed
  }

  isClosed(): boolean {
    return this.closed
  }

  // ---- the rest ----

  stats(): EngineStats {
    const { keys, liveBytes } = this.keydir.totals()
    const { diskBytes, deadBytes } = diskUse(this.segments)
    return {
      keys,
      namespaces: this.keydir.byName.size,
      liveBytes,
      diskBytes,
      deadBytes,
      segments: this.segments.size,
      ...this.counters,
      ...this.reads.counters,
      writes: this.log.counters.writes,
      fsyncs: this.log.counters.fsyncs,
      fsyncTotalMs: this.log.counters.fsyncTotalMs,
      fsyncLastMs: this.log.counters.fsyncLastMs,
      writeFailures: this.log.counters.writeFailures,
      historyDiskBytes: this.windows.diskBytes(),
    }
  }

  async backup(toDir: string): Promise<void> {
    this.checkOpen()
    await this.flush()
    copyDatabase(this.dir, this.segments.values(), this.table, toDir)
  }

  /** Works in every state, a failing disk included, and always lets go of the directory. */
  async close(): Promise<void> {
    if (this.closed) return
    await this.drain()
    this.closed = true
    try {
      await this.upkeep.settle()
      if (this.windows.reclaiming) await this.windows.reclaiming
      if (this.timer) clearInterval(this.timer)
      clearInterval(this.lockTimer)
      this.expiries.close()
      // Everything is on disk: the active segment gets its hint now, so the next open reads
      // hints only instead of scanning it.
      await this.log.close()
      // And a checkpoint of the whole index, so the next open replays nothing.
      await this.upkeep.closingCheckpoint()
    } finally {
      this.windows.close()
      this.release()
    }
  }

  checkOpen(): void {
    if (this.closed) throw new EngineError('CLOSED', 'the database is closed')
  }
}
