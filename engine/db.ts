// The database: namespaces, the in-memory index, the write path with group commit, reads,
// and the glue to recovery and compaction. engine/FORMAT.md describes the files.
import path from 'node:path'
import { CHECKPOINT_FILE, writeCheckpoint } from './checkpoint.js'
import { compactAll } from './compaction.js'
import { wantsFold } from './fold.js'
import { LEGACY_HISTORY } from './history-file.js'
import type { CommittedChange, DbCore } from './db-core.js'
import { EngineError, asEngineError, fail } from './errors.js'
import { fsyncDir, io } from './io.js'
import {
  NAMESPACES_FILE,
  type NamespaceTable,
  TableUnsure,
  writeNamespaces,
} from './namespaces-file.js'
import {
  HISTORY_NAME,
  type Namespace,
  type Segment,
  type Staged,
  hintFile,
  noteVersion,
} from './parts.js'
import { DEL, ENTRY_HEADER, PUT, REC_HEADER, checkEntry, sealEntry, sealRecord } from './record.js'
import { type Group, SegmentLog } from './segment-log.js'
import { KeyDir, type SweepCursor } from './keydir.js'
import { ValueCache } from './value-cache.js'
import { Windows } from './windows.js'
import { WINDOWS_FILE, WINDOW_NAME } from './window-file.js'
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
import { decodeValue, encodeValue } from './values.js'
import { isWellFormed } from './utf8.js'

const MAX_KEY_BYTES = 512
const MAX_NAMESPACE_BYTES = 512

/** One entry of a write, checked and encoded, before it is staged. */
interface Entry {
  n: Namespace
  key: string
  keyLen: number
  type: number
  flags: number
  bytes: Uint8Array | null
  expiresAt: number
  /** Given by commit: the namespace's next version. */
  version?: number
}

export type CommitListener = (changes: CommittedChange[]) => void

function committed(n: Namespace, st: Staged, b: Buffer, keyLen: number): CommittedChange {
  if (st.type !== PUT) return { ns: n.name, type: 'delete', key: st.key, version: st.version }
  const value = decodeValue(b[st.at + 5]!, b, st.at + ENTRY_HEADER + keyLen, st.at + st.len)
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
/** Expiries the storage refused are tried again this often, and at most this many kept. */
const EXPIRY_RETRY_MS = 1000
/** How much log passes between looks at the namespaces for one that wants a fold. */
const FOLD_LOOK_BYTES = 4 * 1024 * 1024
const MAX_EXPIRIES_WAITING = 1_000_000

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
  private touched = new Set<Namespace>()
  /** Listeners for committed changes (onCommit). */
  private commitListeners: CommitListener[] = []
  /** Counts compaction passes started: a checkpoint walk that sees it change gives up. */
  compactionEpoch = 0
  /** How the last open rebuilt the index: from a checkpoint and the log after it, or the log. */
  openedFrom: 'checkpoint' | 'log' = 'log'

  private closed = false
  private release: () => void
  private cache: ValueCache | null
  private timer: NodeJS.Timeout | null = null
  private lockTimer: NodeJS.Timeout | undefined = undefined
  private checkLock: (() => string | undefined) | undefined

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
  private compacting: Promise<void> | null = null
  private checkpointing: Promise<boolean> | null = null
  /** Bytes the write path has made durable, and that count when the last checkpoint began. */
  private logBytes = 0
  private logBytesAtCheckpoint = 0
  /** A compaction replaced segments since the last checkpoint, which no longer applies. */
  private checkpointStale = false
  /**
   * A checkpoint on disk holds the whole index as of `logBytesAtCheckpoint` (open loaded one
   * and replayed nothing after it, or this process wrote one): close need not write another
   * when nothing was written since.
   */
  checkpointCurrent = false
  private checkpointCounters = { checkpoints: 0, checkpointBytes: 0 }
  /** `logBytes` when the namespaces were last looked at for one that wants a fold. */
  private foldLookedAt = 0
  /** Bytes of the checkpoint last written, or of the one open loaded; -1 until looked at. */
  private checkpointSize = -1
  private compactAgain = false
  /** A full pass was asked for (by compact()) and has not started yet. */
  private wantFull = false
  /** Set when compaction met a damaged record: it stops until the directory is repaired. */
  damaged: EngineError | null = null
  private counters = {
    compactions: 0,
    compactedBytes: 0,
    cacheHits: 0,
    cacheMisses: 0,
    corruptReads: 0,
  }

  constructor(cfg: DbConfig) {
    this.dir = cfg.dir
    this.options = cfg.options
    this.release = cfg.release
    this.durability = cfg.options.durability ?? 'always'
    this.segmentBytes = Math.min(cfg.options.segmentBytes ?? 64 * 1024 * 1024, 2 ** 31)
    const cacheBytes = cfg.options.cacheBytes ?? 64 * 1024 * 1024
    this.cache = cacheBytes > 0 ? new ValueCache(cacheBytes) : null
    this.log = new SegmentLog(this.dir, this.durability, this.segmentBytes, {
      applied: (g) => this.applyGroup(g),
      dropped: (g) => {
        for (const st of g.staged) this.unstage(st)
      },
      idle: () => {
        this.maybeCompact()
        this.maybeCheckpoint()
      },
    })
    this.log.version = () => this.version
    this.log.versions = () => {
      const out: [number, number][] = []
      for (const n of this.keydir.byId.values()) out.push([n.id, n.version])
      return out
    }
    this.now = cfg.options.clock ?? Date.now
    this.keydir = new KeyDir(this.log.segments, this.cache, this.now)
    this.keydir.onExpired = (n, key) => this.expired(n, key)
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
    if (this.keydir.byName.has(ns)) return false
    this.log.checkWritable()
    const id = this.table.nextId
    this.saveNamespaces({ nextId: id + 1, list: [...this.table.list, [id, ns]] })
    this.keydir.addNamespace(id, ns)
    return true
  }

  async dropNamespace(ns: string): Promise<boolean> {
    this.checkOpen()
    const n = this.keydir.byName.get(ns)
    if (!n) return false
    this.log.checkWritable()
    this.saveNamespaces({ ...this.table, list: this.table.list.filter(([id]) => id !== n.id) })
    this.keydir.dropNamespace(n)
    this.windows.drop(n.id)
    return true
  }

  /** The namespace table changes only once the new one is durable. */
  private saveNamespaces(next: NamespaceTable): void {
    try {
      writeNamespaces(this.dir, next, this.table)
    } catch (err) {
      // Writes stop until the table on disk is this one again (the log's retry writes it).
      if (err instanceof TableUnsure)
        throw this.log.refuseUntil(err.failure, NAMESPACES_FILE, () =>
          writeNamespaces(this.dir, this.table),
        )
      throw this.log.refuse(err, 'write', NAMESPACES_FILE)
    }
    this.table = next
  }

  hasNamespace(ns: string): boolean {
    return this.keydir.byName.has(ns)
  }

  namespaces(): NamespaceInfo[] {
    const out: NamespaceInfo[] = []
    for (const n of this.keydir.byName.values())
      out.push({
        name: n.name,
        keys: n.map.size,
        bytes: n.bytes,
        historyBytes: this.windows.historyBytes(n.id),
      })
    return out
  }

  namespaceStats(ns: string): NamespaceInfo | undefined {
    const n = this.keydir.byName.get(ns)
    return n
      ? {
          name: n.name,
          keys: n.map.size,
          bytes: n.bytes,
          historyBytes: this.windows.historyBytes(n.id),
        }
      : undefined
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
    if (setting === null || typeof setting !== 'object')
      fail('INVALID_ARGUMENT', 'a history window is { seconds, bytes }')
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
    if (typeof key !== 'string') fail('INVALID_ARGUMENT', 'key must be a string')
    return this.windows.getAt(n, key, this.windows.resolve(n, point))
  }

  /** A page of the namespace as it was at the point (see getAt), in UTF-8 byte order. */
  listAt(ns: string, opts: ListAtOptions, point: HistoryPoint): Promise<ListAtResult> {
    try {
      this.checkOpen()
      const n = this.ns(ns)
      const o = opts ?? {}
      for (const k of [o.prefix, o.start, o.end, o.after])
        if (typeof k === 'string' && !isWellFormed(k))
          fail('INVALID_ARGUMENT', 'prefix, start, end and after are Unicode text')
      return this.windows.listAt(n, o, this.windows.resolve(n, point))
    } catch (err) {
      return Promise.reject(err)
    }
  }

  /** The key's versions within the history, newest first (its live one included). */
  history(ns: string, key: string, opts?: HistoryOptions): HistoryVersion[] {
    this.checkOpen()
    const n = this.ns(ns)
    if (typeof key !== 'string') fail('INVALID_ARGUMENT', 'key must be a string')
    return this.windows.history(n, key, opts ?? {})
  }

  /** The namespace, for the history windows (NAMESPACE_NOT_FOUND when it is none). */
  nsOf(name: string): Namespace {
    return this.ns(name)
  }

  /** The entry bytes a live slot points at. */
  entryOf(slot: number): Buffer {
    const b = this.cache?.get(slot)
    if (b !== undefined) return b
    const s = this.keydir.slots
    return this.readEntry(s.seg[slot]!, s.off[slot]!, s.len[slot]!)
  }

  syncHistory(): Promise<void> {
    return this.windows.syncAsync()
  }

  historyRecovering(
    nsId: number,
    version: number,
    slot: number | undefined,
    tomb: [number, number, number] | undefined,
  ): void {
    if (this.windows.byId.size > 0) this.windows.recovering(nsId, version, slot, tomb)
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
        if (ifVersion !== null && typeof ifVersion !== 'number') {
          fail('INVALID_ARGUMENT', 'ifVersion must be a number or null')
        }
        const refused = conflictOf(key, cur, ifVersion)
        if (refused) return this.afterStaged<PutResult>([[n, key]], refused)
      }
      const e: Entry = { n, key, keyLen, type: PUT, flags, bytes, expiresAt }
      return this.commit(e, (version) => ({ version, created: cur < 0 }))
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
      if (refused) return this.afterStaged<boolean>([[n, key]], refused)
      if (cur < 0) return this.afterStaged<boolean>([[n, key]], false)
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
      const entries: Entry[] = []
      /** Deletes left out because the key is missing: decided, perhaps, on staged writes. */
      const skipped: [Namespace, string][] = []
      /** Keys this batch puts, by namespace: a later delete of one is a write. */
      const put = new Set<string>()
      for (const op of ops) {
        const n = this.ns(op.ns)
        const keyLen = keyBytes(op.key)
        if (op.type === 'put') {
          const expiresAt = expiry(this.now(), op.ttlMs, op.expiresAt)
          const { flags, bytes } = encodeValue(op.value)
          // The encoder reuses its buffer: keep a copy of this one.
          put.add(`${n.id}/${op.key}`)
          entries.push({
            n,
            key: op.key,
            keyLen,
            type: PUT,
            flags,
            bytes: Buffer.from(bytes),
            expiresAt,
          })
        } else if (op.type === 'delete') {
          // A delete of a missing key writes nothing (no version), as delete() does.
          if (!put.has(`${n.id}/${op.key}`) && this.latest(n, op.key) < 0) {
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
          return this.afterStaged<{ version: number }>(checked, refused)
        }
      }
      if (entries.length === 0) {
        const first = opts?.checks?.[0]
        const version = first ? this.ns(first.ns).applied : 0
        return this.afterStaged<{ version: number }>([...checked, ...skipped], { version })
      }
      return this.commit(entries, (version) => ({ version }))
    } catch (err) {
      return Promise.reject(err)
    }
  }

  increment(ns: string, key: string, delta: number): Promise<number> {
    try {
      this.checkOpen()
      const n = this.ns(ns)
      const keyLen = keyBytes(key)
      if (typeof delta !== 'number' || !Number.isFinite(delta)) {
        fail('INVALID_ARGUMENT', 'delta must be a finite number')
      }
      let current = 0
      let expiresAt = 0
      if (this.latest(n, key) >= 0) {
        const v = this.latestValue(n, key)
        if (typeof v !== 'number') fail('NOT_A_NUMBER', `${key} does not hold a number`)
        current = v as number
        expiresAt = this.latestExpiry(n, key)
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
   * stay exact with writes in flight, while reads never see what may yet fail.
   */
  private commit<T>(entries: Entry | Entry[], result: (version: number) => T): Promise<T> {
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
    return this.log.await(g, result(version))
  }

  /**
   * Resolves once the writes still staged for these keys are durable, and rejects with their
   * error if they fail: for an answer decided against them elsewhere (a transaction planned
   * on the index, server/store/embedded-tx.ts), as afterStaged does here.
   */
  settledFor(ns: string, keys: string[]): Promise<void> {
    const n = this.keydir.byName.get(ns)
    if (n === undefined || n.staged.size === 0) return Promise.resolve()
    return this.afterStaged<void>(
      keys.map((k) => [n, k]),
      undefined,
    )
  }

  /**
   * An answer decided against writes still staged (a CONFLICT, a delete that found nothing),
   * given once those are durable. Should one of them fail, this answer fails with the same
   * error instead: what it was decided against never happened, and a failed write is seen by
   * nothing, conditional writes included. `outcome` is a value to resolve with or an error to
   * reject with.
   */
  private afterStaged<T>(keys: [Namespace, string][], outcome: T | EngineError): Promise<T> {
    const groups = new Set<Group>()
    for (const [n, key] of keys) {
      const st = n.staged.size > 0 ? n.staged.get(key) : undefined
      if (st) groups.add(st.group as Group)
    }
    const give = (): T => {
      if (outcome instanceof EngineError) throw outcome
      return outcome
    }
    if (groups.size === 0) {
      try {
        return Promise.resolve(give())
      } catch (err) {
        return Promise.reject(err)
      }
    }
    return Promise.all([...groups].map((g) => this.log.settled(g))).then(give)
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
    this.logBytes += g.len
    this.appliedVersion = this.version
    const changes: CommittedChange[] | null = this.commitListeners.length > 0 ? [] : null
    const windows = this.windows
    windows.begin()
    const touched = this.touched
    touched.clear()
    for (const st of g.staged) {
      noteVersion(seg, st.nsId, st.version)
      const keyLen = b.readUInt16LE(st.at + 6)
      seg.hint?.add(
        st.type,
        b[st.at + 5]!,
        keyLen,
        st.nsId,
        st.version,
        st.expiresAt,
        g.base + st.at,
        st.len,
        b,
        st.at + ENTRY_HEADER,
      )
      const n = this.keydir.byId.get(st.nsId)
      if (!n) continue // dropped meanwhile
      if (n.staged.get(st.key) === st) n.staged.delete(st.key)
      if (st.version > n.applied) n.applied = st.version
      if (changes !== null) changes.push(committed(n, st, b, keyLen))
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
        this.cache?.set(live, b, st.at, st.len)
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
   * An expiry is a write: when a key's time runs out and it leaves the index (met by a read,
   * a sweep or compaction), a tombstone is written for it at the namespace's next version, so
   * the change feed tells watchers and the version of every change is its own. The tombstones
   * of one turn go as one record, after the turn (never inside another write's checks).
   */
  private expiries: [Namespace, string][] = []

  private expired(n: Namespace, key: string): void {
    if (this.expiries.push([n, key]) === 1) setImmediate(() => this.writeExpiries())
  }

  private writeExpiries(): void {
    const due = this.expiries
    this.expiries = []
    if (this.closed) return
    // A full disk takes a write that fits (the next one simply tries); a failing one none.
    if (this.log.health.state === 'failed') return this.expiriesLater(due)
    const entries: Entry[] = []
    for (const [n, key] of due) {
      // Dropped, written again, or already noted: nothing to say.
      if (this.keydir.byId.get(n.id) !== n || n.map.has(key) || n.staged.has(key)) continue
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
      this.commit(entries, () => undefined).catch(() => this.expiriesLater(due))
    } catch {
      this.expiriesLater(due)
    }
  }

  /**
   * Expiries the storage did not take now (a full or failing disk): written once it takes
   * writes again, since watchers wait for their deletes. The key is gone from the index
   * already and expired on disk too, so until then nothing but the event is missing. At
   * most MAX_EXPIRIES_WAITING are kept; past that, the rest lose their event only.
   */
  private expiriesLater(due: [Namespace, string][]): void {
    if (this.closed) return
    for (const d of due) {
      if (this.expiries.length >= MAX_EXPIRIES_WAITING) break
      this.expiries.push(d)
    }
    if (this.expiryRetry !== undefined || this.expiries.length === 0) return
    this.expiryRetry = setTimeout(() => {
      this.expiryRetry = undefined
      if (this.expiries.length > 0) this.writeExpiries()
    }, EXPIRY_RETRY_MS)
    this.expiryRetry.unref()
  }
  private expiryRetry: NodeJS.Timeout | undefined = undefined

  /**
   * Finds keys whose time has run out and lets them go (each an expiry, as above), looking at
   * no more than `budget` keys a call: namespaces are taken in turn, and a large one is walked
   * across calls, each going on after the last key the previous one looked at.
   */
  sweepExpired(budget: number): void {
    this.checkOpen()
    const all = [...this.keydir.byId.values()].filter((n) => n.ttl > 0 && !n.building)
    const now = this.now()
    for (let k = 0; k < all.length && budget > 0; k++) {
      const n = all[this.sweepAt % all.length]!
      const { gone, looked, next } = this.keydir.expired(n, this.sweepFrom.get(n), budget, now)
      budget -= looked
      if (next === undefined) {
        this.sweepFrom.delete(n)
        this.sweepAt++
      } else this.sweepFrom.set(n, next)
      for (const key of gone) this.keydir.liveSlot(n, key)
    }
  }

  /** Which namespace the next sweep starts with, and the last key a namespace's walk saw. */
  private sweepAt = 0
  private sweepFrom = new WeakMap<Namespace, SweepCursor>()

  /** The namespace's version: that of its last durable write (0 when it has none). */
  namespaceVersion(ns: string): number {
    this.checkOpen()
    return this.ns(ns).applied
  }

  /**
   * A staged entry whose group failed. Its version is given back: a failure fails every group
   * not yet acknowledged (segment-log.ts, fail), so no write staged after it survives either,
   * and the namespace's next write takes the first version that failed. A failed write then
   * leaves no gap in the versions, which a watch resumed after a restart would meet as
   * history it cannot replay.
   */
  private unstage(st: Staged): void {
    const n = this.keydir.byId.get(st.nsId)
    if (n === undefined) return
    if (n.staged.get(st.key) === st) n.staged.delete(st.key)
    if (st.version <= n.version) n.version = st.version - 1
  }

  /**
   * The version a write must be checked against: the newest staged entry for the key, else
   * the index. -1 when the key is missing (deleted, or expired).
   */
  private latest(n: Namespace, key: string): number {
    const st = n.staged.size > 0 ? n.staged.get(key) : undefined
    if (st) {
      if (st.type !== PUT || (st.expiresAt !== 0 && st.expiresAt <= this.now())) return -1
      return st.version
    }
    const slot = this.keydir.liveSlot(n, key)
    return slot < 0 ? -1 : this.keydir.slots.version[slot]!
  }

  private latestValue(n: Namespace, key: string): unknown {
    const st = n.staged.get(key)
    if (st) {
      const b = st.group.buf
      const keyLen = b.readUInt16LE(st.at + 6)
      return decodeValue(b[st.at + 5]!, b, st.at + ENTRY_HEADER + keyLen, st.at + st.len)
    }
    return this.readValue(this.keydir.liveSlot(n, key))
  }

  private latestExpiry(n: Namespace, key: string): number {
    const st = n.staged.get(key)
    return st ? st.expiresAt : this.keydir.slots.expires[this.keydir.liveSlot(n, key)]!
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
    const exp = this.latestExpiry(n, key)
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
    if (typeof key !== 'string') fail('INVALID_ARGUMENT', 'key must be a string')
    const slot = this.keydir.liveSlot(n, key)
    if (slot < 0) return undefined
    const value = this.readValue(slot)
    const exp = this.keydir.slots.expires[slot]!
    return exp !== 0
      ? { value, version: this.keydir.slots.version[slot]!, expiresAt: exp }
      : { value, version: this.keydir.slots.version[slot]! }
  }

  stat(
    ns: string,
    key: string,
  ): Promise<{ version: number; bytes: number; expiresAt?: number } | undefined> {
    try {
      this.checkOpen()
      const n = this.ns(ns)
      if (typeof key !== 'string') fail('INVALID_ARGUMENT', 'key must be a string')
      const slot = this.keydir.liveSlot(n, key)
      if (slot < 0) return Promise.resolve(undefined)
      const s = this.keydir.slots
      const exp = s.expires[slot]
      return Promise.resolve(
        exp !== 0
          ? { version: s.version[slot], bytes: s.len[slot]! - ENTRY_HEADER, expiresAt: exp }
          : { version: s.version[slot], bytes: s.len[slot]! - ENTRY_HEADER },
      )
    } catch (err) {
      return Promise.reject(err)
    }
  }

  /**
   * The value a live slot points at. The cache is keyed by slot: an entry is dropped when
   * its slot is pointed elsewhere or freed, and compaction moves a slot only to a copy of the
   * same bytes.
   */
  readValue(slot: number): unknown {
    const cache = this.cache
    let b = cache?.get(slot)
    if (b !== undefined) this.counters.cacheHits++
    else {
      b = this.readEntry(
        this.keydir.slots.seg[slot]!,
        this.keydir.slots.off[slot]!,
        this.keydir.slots.len[slot]!,
      )
      if (cache) {
        this.counters.cacheMisses++
        cache.set(slot, b, 0, b.length)
      }
    }
    const keyLen = b.readUInt16LE(6)
    return decodeValue(b[5]!, b, ENTRY_HEADER + keyLen, b.length)
  }

  /** A pass's outputs, `bytes` of them, replaced its inputs in the manifest. */
  noteCompacted(bytes: number): void {
    this.counters.compactedBytes += bytes
    this.counters.compactions++
    // The checkpoint names segments the pass replaced.
    this.checkpointStale = true
  }

  /** Counts a read (or compaction) that met a damaged record. */
  noteCorrupt(): void {
    this.counters.corruptReads++
  }

  /** The entry's bytes, checked against its checksum: damage is named, never returned. */
  readEntry(segId: number, off: number, len: number): Buffer {
    const seg = this.segments.get(segId)
    if (!seg) throw new EngineError('CORRUPT', `segment ${segId} is missing`)
    const b = Buffer.allocUnsafe(len)
    const got = io.readSync(seg.fd, b, 0, len, off)
    if (got !== len || checkEntry(b, 0, len) !== len) {
      this.counters.corruptReads++
      throw new EngineError(
        'CORRUPT',
        `${path.basename(seg.file)}: damaged record at offset ${off}; run \`cairn repair --data ${this.dir}\` to keep every intact record`,
      )
    }
    return b
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
    if (typeof prefix !== 'string') fail('INVALID_ARGUMENT', 'prefix must be a string')
    if (after !== undefined && typeof after !== 'string')
      fail('INVALID_ARGUMENT', 'after must be a string')
    if (!isWellFormed(prefix) || (after !== undefined && !isWellFormed(after)))
      fail('INVALID_ARGUMENT', 'prefix and after are Unicode text: one holds a lone surrogate')
    if (!Number.isInteger(limit) || limit < 1)
      fail('INVALID_ARGUMENT', 'limit must be a positive integer')
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

  // ---- compaction ----

  private maybeCompact(): void {
    if (this.compacting || this.closed) return
    // A pass started here rewrites only the segments with most garbage (chooseSegments).
    if (this.garbageDue()) void this.compact({ full: false }).catch(() => {})
  }

  /** Whether enough of the disk is dead for a pass to start by itself. */
  private garbageDue(): boolean {
    if (this.options.autoCompact === false) return false
    const { diskBytes, deadBytes } = this.stats()
    const ratio = this.options.compactionDeadRatio ?? 0.2
    const min = this.minDeadBytes()
    return deadBytes >= min && deadBytes > diskBytes * ratio && deadBytes >= this.futile + min / 4
  }

  /**
   * The dead bytes a pass that freed little left behind (0 after one that freed enough): what
   * it could not free is mostly tombstones it must keep, which the next pass would only
   * rewrite again, so one starts by itself only once garbage has grown past them.
   */
  private futile = 0

  /** The least garbage that starts a pass by itself. */
  private minDeadBytes(): number {
    return this.options.compactionMinDeadBytes ?? 16 * 1024 * 1024
  }

  /**
   * Reclaims the space of overwritten, deleted and expired data. By default every sealed
   * segment is rewritten (what an operator asks for); `full: false` rewrites only those with
   * most garbage, as the automatic passes do.
   */
  compact(opts?: { full?: boolean }): Promise<void> {
    if (this.log.lockLost !== undefined)
      return Promise.reject(new EngineError('IO_ERROR', this.log.lockLost))
    const full = opts?.full !== false
    try {
      this.checkOpen()
    } catch (err) {
      return Promise.reject(err)
    }
    if (full) this.wantFull = true
    if (this.compacting) {
      // A pass already running may have started before the caller's latest writes.
      if (full) this.compactAgain = true
      return this.compacting
    }
    this.compacting = (async () => {
      let freed = 0
      try {
        do {
          this.compactAgain = false
          const whole = this.wantFull
          this.wantFull = false
          await this.drain()
          if (this.closed) return
          if (this.damaged) throw this.damaged
          this.compactionEpoch++
          freed = await compactAll(this, whole).catch((err) => {
            throw asEngineError(err, 'compaction')
          })
        } while (this.compactAgain && !this.closed)
      } finally {
        this.compacting = null
        // Garbage written while the pass ran, or left by its choice, may call for another.
        // Passes otherwise start only when writes pause, and a database that has just gone
        // quiet would keep it. Only a pass that freed a good part of what starts one goes
        // round: one that rewrote tombstones it must keep frees nothing, and would again
        // (nor does the next write start one until garbage grows: `futile`).
        // Started before this promise settles, so whoever waits for compaction to settle
        // waits for it too; a caller of compact() still waits for its own pass only.
        if (freed > 0 && freed >= this.minDeadBytes() / 4) {
          this.futile = 0
          this.maybeCompact()
        } else if (!this.closed) this.futile = this.stats().deadBytes
        // Expired history is reclaimed with the log's garbage.
        if (!this.closed) await this.windows.reclaim().catch(() => {})
        // The checkpoint names segments the pass replaced: write one that names the new ones.
        this.maybeCheckpoint()
      }
    })()
    return this.compacting
  }

  isCompacting(): boolean {
    return this.compacting !== null
  }

  // ---- checkpoints ----

  /**
   * A checkpoint in the background once the log has grown by `checkpointBytes` (and by at
   * least the last checkpoint's size, so checkpoints never write more than the log does),
   * or, sooner, by a sixteenth of that once a compaction has made the last one useless (not
   * after every pass: under steady overwrites passes come often, and the next open merely
   * replays more of the log meanwhile).
   */
  private maybeCheckpoint(): void {
    if (this.checkpointing || this.compacting || this.closed) return
    if (this.log.health.state !== 'ok') return
    const every = this.options.checkpointBytes ?? 64 * 1024 * 1024
    if (every <= 0) return
    const grown = this.logBytes - this.logBytesAtCheckpoint
    const last = this.lastCheckpointSize()
    const due = Math.max(every, last)
    if (grown >= (this.checkpointStale ? due / 16 : due)) return void this.checkpoint()
    // Keys written since the open are strings in a Map and a sorted list (fold.ts): fatter
    // than a base, and a listing of them is built string by string. A namespace with enough
    // of them gets its checkpoint sooner, which folds them into its base, once the log has
    // grown by the last checkpoint's size (so checkpoints still never write more than the
    // log does). The namespaces are looked at once per FOLD_LOOK_BYTES of log, not per write.
    if (grown < Math.max(FOLD_LOOK_BYTES, last)) return
    if (this.logBytes - this.foldLookedAt < FOLD_LOOK_BYTES) return
    this.foldLookedAt = this.logBytes
    for (const n of this.keydir.byName.values()) if (wantsFold(n)) return void this.checkpoint()
  }

  /**
   * Writes a checkpoint of the index now (after the one running, if any), so the next open
   * replays only what is written after it. Resolves false when it was not written (a
   * compaction started meanwhile, the disk refused): nothing else depends on it.
   */
  async checkpoint(): Promise<boolean> {
    this.checkOpen()
    while (this.checkpointing) await this.checkpointing
    if (this.closed) return false
    const bytesAtStart = this.logBytes
    const stale = this.checkpointStale
    this.checkpointStale = false
    this.checkpointing = writeCheckpoint(this, false).then((ok) => {
      this.checkpointing = null
      if (ok) {
        this.logBytesAtCheckpoint = bytesAtStart
        this.checkpointCurrent = true
      } else if (stale) this.checkpointStale = true
      return ok
    })
    return this.checkpointing
  }

  /** Counts a checkpoint written, and its size. */
  noteCheckpoint(bytes: number): void {
    this.checkpointCounters.checkpoints++
    this.checkpointCounters.checkpointBytes = bytes
    this.checkpointSize = bytes
  }

  /**
   * The size the next background checkpoint is measured against: that of the last one
   * written or, before one is, of the one open loaded (a process's first checkpoint writes
   * the whole index too).
   */
  private lastCheckpointSize(): number {
    if (this.checkpointSize < 0) {
      this.checkpointSize = 0
      if (this.openedFrom === 'checkpoint') {
        try {
          this.checkpointSize = io.sizeOf(path.join(this.dir, CHECKPOINT_FILE))
        } catch {}
      }
    }
    return this.checkpointSize
  }

  /** Checkpoints written since open, and the size of the last. */
  checkpointStats(): { checkpoints: number; checkpointBytes: number } {
    return { ...this.checkpointCounters }
  }

  /** Resolves once no compaction pass is running (a pass may start again at any write). */
  async compactionSettled(): Promise<void> {
    while (this.compacting) await this.compacting.catch(() => {})
  }

  /**
   * Resolves once the index is complete after open: every namespace's sorted list built and
   * every checkpoint base hashed. Reads and writes never wait for this; it is for warming up
   * and for measuring the index.
   */
  async indexReady(): Promise<void> {
    for (const n of this.keydir.byName.values()) {
      await n.building
      await n.map.base?.hashed
    }
  }

  isClosed(): boolean {
    return this.closed
  }

  // ---- the rest ----

  stats(): EngineStats {
    const { keys, liveBytes } = this.keydir.totals()
    let diskBytes = 0
    let live = 0
    for (const seg of this.segments.values()) {
      diskBytes += seg.end
      live += seg.live
    }
    return {
      keys,
      namespaces: this.keydir.byName.size,
      liveBytes,
      diskBytes,
      deadBytes: Math.max(0, diskBytes - live),
      segments: this.segments.size,
      ...this.counters,
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
    // Copied in one synchronous step, so no write or compaction swap happens half-way.
    io.mkdirSync(toDir)
    const copy = (from: string, name: string, bytes: number) => {
      const src = io.openSync(from, 'r')
      const dst = io.openSync(path.join(toDir, name), 'w')
      try {
        const buf = Buffer.allocUnsafe(1024 * 1024)
        for (let off = 0; off < bytes; ) {
          const n = io.readSync(src, buf, 0, Math.min(buf.length, bytes - off), off)
          if (n === 0) break
          io.writeAllSync(dst, buf, 0, n, off)
          off += n
        }
        io.fsyncSync(dst)
      } finally {
        io.closeSync(src)
        io.closeSync(dst)
      }
    }
    for (const seg of this.segments.values()) {
      copy(seg.file, path.basename(seg.file), seg.written)
      const hint = path.join(this.dir, hintFile(seg.id))
      if (!seg.hint && io.existsSync(hint)) copy(hint, hintFile(seg.id), io.sizeOf(hint))
    }
    // The history files, so that a copy resumes watches too.
    for (const name of io.readdirSync(this.dir))
      if (
        HISTORY_NAME.test(name) ||
        name === LEGACY_HISTORY ||
        WINDOW_NAME.test(name) ||
        name === WINDOWS_FILE
      )
        copy(path.join(this.dir, name), name, io.sizeOf(path.join(this.dir, name)))
    writeNamespaces(toDir, this.table)
    fsyncDir(toDir)
  }

  /** Works in every state, a failing disk included, and always lets go of the directory. */
  async close(): Promise<void> {
    if (this.closed) return
    await this.drain()
    this.closed = true
    try {
      if (this.compacting) await this.compacting.catch(() => {})
      if (this.checkpointing) await this.checkpointing
      if (this.windows.reclaiming) await this.windows.reclaiming
      if (this.timer) clearInterval(this.timer)
      clearInterval(this.lockTimer)
      clearTimeout(this.expiryRetry)
      // Everything is on disk: the active segment gets its hint now, so the next open reads
      // hints only instead of scanning it.
      await this.log.close()
      // And a checkpoint of the whole index, so the next open reads one file and replays
      // nothing. Only on a healthy disk: otherwise the last checkpoint stays, still valid.
      const unchanged =
        this.checkpointCurrent &&
        !this.checkpointStale &&
        this.logBytes === this.logBytesAtCheckpoint
      if (this.log.health.state === 'ok' && !unchanged) await writeCheckpoint(this, true)
    } finally {
      this.windows.close()
      this.release()
    }
  }

  checkOpen(): void {
    if (this.closed) throw new EngineError('CLOSED', 'the database is closed')
  }
}

/** The CONFLICT to answer unless the key is at `expected` (null: absent; `current` -1). */
function conflictOf(
  key: string,
  current: number,
  expected: number | null,
): EngineError | undefined {
  const now = current < 0 ? null : current
  if (now === expected) return undefined
  return new EngineError('CONFLICT', `${key}: version is ${now}, expected ${expected}`)
}

function checkName(ns: string): void {
  if (typeof ns !== 'string' || ns.length === 0 || Buffer.byteLength(ns) > MAX_NAMESPACE_BYTES) {
    fail('INVALID_ARGUMENT', `a namespace name is 1 to ${MAX_NAMESPACE_BYTES} UTF-8 bytes`)
  }
  // Stored as UTF-8 (NAMESPACES): a lone surrogate has no UTF-8 form, and would come back
  // as U+FFFD, another name.
  if (!isWellFormed(ns)) fail('INVALID_ARGUMENT', 'a namespace name holds a lone surrogate')
}

function keyBytes(key: string): number {
  if (typeof key !== 'string') fail('INVALID_ARGUMENT', 'key must be a string')
  const n = key.length * 3 <= MAX_KEY_BYTES ? utf8Length(key) : Buffer.byteLength(key)
  if (n === 0 || n > MAX_KEY_BYTES)
    fail('INVALID_ARGUMENT', `a key is 1 to ${MAX_KEY_BYTES} UTF-8 bytes, got ${n}`)
  // Keys are kept and ordered as UTF-8: a lone surrogate has no UTF-8 form.
  if (n !== key.length && !isWellFormed(key))
    fail('INVALID_ARGUMENT', 'a key is Unicode text: it holds a lone surrogate')
  return n
}

function utf8Length(s: string): number {
  let n = 0
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c < 0x80) n++
    else if (c < 0x800) n += 2
    else if (c >= 0xd800 && c < 0xdc00 && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1)
      if (d >= 0xdc00 && d < 0xe000) {
        n += 4
        i++
      } else n += 3
    } else n += 3
  }
  return n
}

function expiry(now: number, ttlMs: number | undefined, expiresAt: number | undefined): number {
  if (ttlMs !== undefined && expiresAt !== undefined)
    fail('INVALID_ARGUMENT', 'give ttlMs or expiresAt, not both')
  if (ttlMs !== undefined) {
    if (typeof ttlMs !== 'number' || !Number.isFinite(ttlMs) || ttlMs <= 0) {
      fail('INVALID_ARGUMENT', 'ttlMs must be a positive number of milliseconds')
    }
    return now + Math.ceil(ttlMs)
  }
  if (expiresAt !== undefined) {
    if (typeof expiresAt !== 'number' || !Number.isFinite(expiresAt) || expiresAt <= 0) {
      fail('INVALID_ARGUMENT', 'expiresAt must be milliseconds since the Unix epoch')
    }
    return expiresAt
  }
  return 0
}
