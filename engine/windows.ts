// History windows, database-wide: which namespaces keep one (WINDOWS), what each commit
// supersedes (caught as the index lets go of a version), and reads at a point over the live
// index and the windows (FORMAT.md, "History windows").
import path from 'node:path'
import type { DbCore } from './db-core.js'
import { EngineError, fail } from './errors.js'
import { io } from './io.js'
import type { EntryAt, Namespace } from './parts.js'
import { DEL, PUT } from './record.js'
import type {
  GetResult,
  HistoryOptions,
  HistoryPoint,
  HistoryVersion,
  ListAtOptions,
  ListAtResult,
} from './types.js'
import { SortedKeys } from './sorted-keys.js'
import { compareKeys } from './utf8.js'
import { ValueCache } from './value-cache.js'
import { type Kept, Window } from './window.js'
import {
  WINDOW_NAME,
  type WindowSetting,
  readWindows,
  windowFile,
  writeWindows,
} from './window-file.js'

/** What the windows need of the database beyond DbCore. */
export interface WindowHost extends DbCore {
  readEntry(segId: number, off: number, len: number): Buffer
  readValue(slot: number): unknown
  /** The entry bytes a live slot points at (from the cache when it has them). */
  entryOf(slot: number): Buffer
  /** Throws NAMESPACE_NOT_FOUND for a name that is none. */
  nsOf(name: string): Namespace
}

/** A point resolved: the namespace's version then, and the time its expiries are judged at. */
interface At {
  version: number
  /** -1: the last moment `version` was current, found in `w` when an expiry asks. */
  at: number
  w?: Window | undefined
}

/** The time a point's expiries are judged at. */
function timeOf(p: At): number {
  if (p.at < 0) p.at = p.w === undefined ? Date.now() : p.w.atOf(p.version + 1) - 1
  return p.at
}

export class Windows {
  readonly byId = new Map<number, Window>()
  /** The time of the last commit: commit times never go back, whatever the clock does. */
  private lastAt = 0
  /** Per namespace, the time of its last commit in this process (also without a window). */
  private lastCommit = new Map<number, number>()
  private readonly openedAt: number
  /** While a group is applied: the windows it has added to (their records are being made). */
  private collecting: Set<Window> | null = null
  /** Values of kept versions recently read. */
  private readonly cache = new ValueCache(16 * 1024 * 1024)
  /** What recovery found superseded by writes the windows had not seen (a crash). */
  private recovered = new Map<number, EntryAt[]>()

  constructor(
    private readonly db: WindowHost,
    readonly clock: () => number,
  ) {
    this.openedAt = clock()
  }

  /** The commit time for a group applied now. */
  now(): number {
    const t = this.clock()
    if (t > this.lastAt) this.lastAt = t
    return this.lastAt
  }

  /** Reads WINDOWS and every window file, before recovery (which tells what they missed). */
  load(): void {
    for (const [id, setting] of readWindows(this.db.dir)) {
      const w = new Window(this.db.dir, id, setting, this.cache)
      if (!w.load()) w.floorVersion = -1 // made once the namespace's version is known
      this.byId.set(id, w)
      this.lastAt = Math.max(this.lastAt, w.lastAt)
    }
  }

  /**
   * Recovery applies an entry of a namespace with a window at `version` over the key's `slot`
   * (or a tombstone, `tomb`): when the window has not seen that version, what it supersedes
   * is kept now (read once recovery is done).
   */
  recovering(nsId: number, version: number, slot: number | undefined, tomb?: EntryAt): void {
    const list = this.unseen(nsId, version)
    if (list === undefined) return
    const s = this.db.keydir.slots
    if (slot !== undefined) list.push({ seg: s.seg[slot]!, off: s.off[slot]!, len: s.len[slot]! })
    if (tomb !== undefined) list.push(tomb)
  }

  /**
   * Recovery meets an entry after `current`, a newer version of its key (a copy compaction
   * moved forward): the write that superseded it is at most `current`, so when the window has
   * not seen `current` the entry is kept. It may be one the window holds already (kept once,
   * by version) or one superseded before the window's floor (never read: points before the
   * floor are refused, and a newer kept or live version answers every point after it).
   */
  recoveringLate(nsId: number, current: number, entry: EntryAt): void {
    this.unseen(nsId, current)?.push(entry)
  }

  /** What recovery found for the namespace's window, when it has not seen `version`. */
  private unseen(nsId: number, version: number): EntryAt[] | undefined {
    const w = this.byId.get(nsId)
    if (w === undefined || w.floorVersion < 0 || version <= w.lastVersion) return undefined
    let list = this.recovered.get(nsId)
    if (list === undefined) {
      list = []
      this.recovered.set(nsId, list)
    }
    return list
  }

  /**
   * Once open: windows of namespaces that are gone go; new or unreadable ones start now; the
   * versions recovery found beyond a window get one record, at this time (they were made
   * visible by this open: no read saw them before).
   */
  opened(): void {
    const at = this.now()
    let changed = false
    for (const [id, w] of this.byId) {
      const n = this.db.keydir.byId.get(id)
      if (n === undefined) {
        w.close()
        io.rmSync(w.file)
        this.byId.delete(id)
        changed = true
        continue
      }
      if (w.floorVersion < 0) {
        w.create(n.applied, at)
        continue
      }
      // A log that lost writes the window has (durability other than `always`, a power cut):
      // those versions will be given again, so the window starts over.
      w.cutAbove(n.applied, at)
      const found = this.recovered.get(id)
      if (n.applied > w.lastVersion || found !== undefined) {
        const entries: Buffer[] = []
        for (const { seg, off, len } of found ?? []) {
          try {
            entries.push(this.db.readEntry(seg, off, len))
          } catch {}
        }
        w.append(n.applied, at, entries)
      }
      w.expire(at)
    }
    this.recovered.clear()
    if (changed) writeWindows(this.db.dir, this.settings())
    // Files of windows WINDOWS no longer names (a change that failed half-way).
    for (const name of io.readdirSync(this.db.dir)) {
      const m = WINDOW_NAME.exec(name)
      if (m && !this.byId.has(Number(m[1]))) io.rmSync(path.join(this.db.dir, name))
    }
  }

  private settings(): Map<number, WindowSetting> {
    return new Map([...this.byId].map(([id, w]) => [id, w.setting]))
  }

  /** Sets (or, with seconds or bytes 0, removes) a namespace's window. */
  set(n: Namespace, setting: WindowSetting): void {
    const { seconds, bytes } = setting
    if (!Number.isInteger(seconds) || seconds < 0 || !Number.isInteger(bytes) || bytes < 0)
      fail('INVALID_ARGUMENT', 'a history window is whole seconds and bytes, 0 or more')
    const w = this.byId.get(n.id)
    const next = this.settings()
    if (seconds === 0 || bytes === 0) {
      if (w === undefined) return
      next.delete(n.id)
      writeWindows(this.db.dir, next)
      this.byId.delete(n.id)
      w.close()
      io.rmSync(w.file)
      return
    }
    if (w !== undefined) {
      next.set(n.id, { seconds, bytes })
      writeWindows(this.db.dir, next)
      w.setting = { seconds, bytes }
      w.expire(this.clock())
      return
    }
    // The file first: WINDOWS never names a window whose file was not made.
    const made = new Window(this.db.dir, n.id, { seconds, bytes }, this.cache)
    made.create(n.applied, this.now())
    next.set(n.id, made.setting)
    try {
      writeWindows(this.db.dir, next)
    } catch (err) {
      made.close()
      io.rmSync(made.file)
      throw err
    }
    this.byId.set(n.id, made)
  }

  get(nsId: number): WindowSetting | undefined {
    const w = this.byId.get(nsId)
    return w === undefined ? undefined : { ...w.setting }
  }

  /** A namespace is dropped: its window goes with it. */
  drop(nsId: number): void {
    const w = this.byId.get(nsId)
    if (w === undefined) return
    this.byId.delete(nsId)
    w.close()
    try {
      io.rmSync(w.file)
      writeWindows(this.db.dir, this.settings())
    } catch {
      // The next open removes the file of a namespace that is gone.
    }
  }

  // ---- the write path ----

  /** A group is being applied: what it supersedes is gathered per namespace. */
  begin(): void {
    this.collecting = this.byId.size > 0 ? new Set() : null
  }

  /**
   * An entry of the group being applied, of namespace `nsId`, at buf[at, at + len) when it is
   * a tombstone (kept itself: it is a version of its key too).
   */
  entry(nsId: number, key: string, buf: Buffer | null, at = 0, len = 0): void {
    const c = this.collecting
    if (c === null) return
    const w = this.byId.get(nsId)
    if (w === undefined) return
    c.add(w)
    if (buf !== null) w.add(key, buf, at, len)
  }

  /** The index lets go of a live slot of `n` (overwritten, deleted or expired). */
  superseding(n: Namespace, key: string, slot: number): void {
    const w = this.byId.get(n.id)
    if (w === undefined) return
    let bytes: Buffer
    try {
      bytes = this.db.entryOf(slot)
    } catch {
      return // damaged: there is no version to keep
    }
    w.add(key, bytes, 0, bytes.length)
    const c = this.collecting
    if (c !== null) c.add(w)
    else {
      // An expiry met outside a write: kept at once, at the namespace's current version (its
      // delete follows as a write of its own).
      const at = this.now()
      w.commit(n.applied, at)
      w.expire(at)
    }
  }

  /** The group is applied: one record per namespace with a window it wrote. */
  end(touched: Iterable<Namespace>): void {
    const c = this.collecting
    this.collecting = null
    const at = this.now()
    for (const n of touched) this.lastCommit.set(n.id, at)
    if (c === null) return
    for (const w of c) {
      const n = this.db.keydir.byId.get(w.nsId)
      if (n === undefined) continue
      w.commit(n.applied, at)
      w.expire(at)
    }
  }

  /** Makes every window's appends durable (before a checkpoint or a compaction relies on them). */
  sync(): void {
    for (const w of this.byId.values()) {
      try {
        w.sync()
      } catch {}
    }
  }

  /** sync(), off the event loop. */
  async syncAsync(): Promise<void> {
    for (const w of [...this.byId.values()]) {
      try {
        await w.syncAsync()
      } catch {}
    }
  }

  /** A reclaim under way, which close waits for. */
  reclaiming: Promise<void> | null = null

  /** Rewrites window files that hold more dropped records than kept ones, one at a time. */
  reclaim(): Promise<void> {
    if (this.reclaiming !== null) return this.reclaiming
    const now = this.clock()
    this.reclaiming = (async () => {
      for (const w of [...this.byId.values()]) {
        w.expire(now)
        // A window dropped or removed meanwhile has its file gone: nothing to rewrite.
        if (this.byId.get(w.nsId) !== w) continue
        try {
          await w.reclaim()
        } catch {}
      }
    })().finally(() => {
      this.reclaiming = null
    })
    return this.reclaiming
  }

  close(): void {
    this.sync()
    for (const w of this.byId.values()) w.close()
  }

  // ---- reads ----

  /** The namespace's window, its history expired as of now. */
  private windowOf(n: Namespace): Window | undefined {
    const w = this.byId.get(n.id)
    w?.expire(this.clock())
    return w
  }

  /** The oldest point still readable in the namespace. */
  from(n: Namespace): { version: number; at: number } {
    const w = this.byId.get(n.id)
    if (w !== undefined) {
      const now = this.clock()
      w.expire(now)
      return w.from(now)
    }
    return { version: n.applied, at: this.lastCommit.get(n.id) ?? this.openedAt }
  }

  historyBytes(nsId: number): number {
    return this.byId.get(nsId)?.held ?? 0
  }

  /** History held on disk, all windows. */
  diskBytes(): number {
    let n = 0
    for (const w of this.byId.values()) n += w.diskBytes()
    return n
  }

  /** The point as a version and a time, or why it cannot be read. */
  resolve(n: Namespace, point: HistoryPoint): At {
    if (point === null || typeof point !== 'object') badPoint('a point is { version } or { at }')
    const w = this.byId.get(n.id)
    if ('version' in point) {
      const v = point.version
      // The present needs no history.
      if (v === n.applied) return { version: v, at: this.clock() }
      if (typeof v !== 'number' || !Number.isInteger(v) || v < 0)
        badPoint('a version is a whole number, 0 or more')
      if (v > n.applied) badPoint(`version ${v} is above the namespace's ${n.applied}`)
      // Once expired, the oldest readable version is the floor's (Window.from).
      if (w !== undefined) w.expire(this.clock())
      const oldest = w === undefined ? n.applied : w.floorVersion
      if (v < oldest)
        throw new EngineError(
          'HISTORY_EXPIRED',
          `version ${v} is older than the history, which begins at ${oldest}`,
        )
      // Its time (the last moment it was current) is looked up only if an expiry needs it.
      return { version: v, at: -1, w }
    }
    if (!('at' in point)) badPoint('a point is { version } or { at }')
    const t = (point as { at: unknown }).at
    if (typeof t !== 'number' || !Number.isFinite(t))
      badPoint('a time is milliseconds since the Unix epoch')
    const at = t as number
    if (at > this.clock()) badPoint('a time in the future')
    const from = this.from(n)
    if (at < from.at)
      throw new EngineError(
        'HISTORY_EXPIRED',
        `${new Date(at).toISOString()} is older than the history, which begins at ${new Date(from.at).toISOString()}`,
      )
    return { version: w === undefined ? n.applied : w.versionAt(at), at }
  }

  /** The key as it was at the point. */
  getAt(n: Namespace, key: string, p: At): GetResult | undefined {
    return this.stateAt(n, key, p, true)
  }

  /** The key's version and expiry at the point, its value too when `value` (else undefined). */
  private stateAt(n: Namespace, key: string, p: At, value: boolean): GetResult | undefined {
    const s = this.db.keydir.slots
    const slot = n.map.get(key)
    // The live version is the key's newest: at or below the point, it is the answer.
    if (slot !== undefined && s.version[slot]! <= p.version) {
      const exp = s.expires[slot]!
      if (exp !== 0 && exp <= timeOf(p)) return undefined
      const v = value ? this.db.readValue(slot) : undefined
      return exp !== 0
        ? { value: v, version: s.version[slot]!, expiresAt: exp }
        : { value: v, version: s.version[slot]! }
    }
    const w = this.byId.get(n.id)
    const kept = w?.latest(key, p.version)
    if (kept === undefined || kept.type === DEL) return undefined
    if (kept.expiresAt !== 0 && kept.expiresAt <= timeOf(p)) return undefined
    const v = value ? w!.value(kept) : undefined
    return kept.expiresAt !== 0
      ? { value: v, version: kept.version, expiresAt: kept.expiresAt }
      : { value: v, version: kept.version }
  }

  /** A page of the namespace as it was at the point. */
  async listAt(n: Namespace, opts: ListAtOptions, p: At): Promise<ListAtResult> {
    const prefix = opts.prefix ?? ''
    const { start, end, after } = opts
    const limit = opts.limit ?? 1000
    const reverse = opts.reverse === true
    for (const [name, v] of [
      ['prefix', prefix],
      ['start', start],
      ['end', end],
      ['after', after],
    ] as const)
      if (v !== undefined && typeof v !== 'string')
        fail('INVALID_ARGUMENT', `${name} must be a string`)
    if (!Number.isInteger(limit) || limit < 1)
      fail('INVALID_ARGUMENT', 'limit must be a positive integer')
    if (start !== undefined && end !== undefined && compareKeys(start, end) > 0)
      fail('INVALID_ARGUMENT', 'start is after end')
    if (n.building) await n.building
    const within = (k: string) =>
      k.startsWith(prefix) &&
      (start === undefined || compareKeys(k, start) >= 0) &&
      (end === undefined || compareKeys(k, end) < 0) &&
      (after === undefined || (reverse ? compareKeys(k, after) < 0 : compareKeys(k, after) > 0))
    const step = reverse ? -1 : 1
    // The kept keys, in the listing's order, from where it begins (by bisection); `within`
    // ends them. Nothing below waits, so no write changes them while the page is made.
    const kept = this.byId.get(n.id)?.keys() ?? new SortedKeys()
    let kp: Place
    if (!reverse) {
      kp = kept.seek(prefix, false)
      if (start !== undefined) kp = later(kp, kept.seek(start, false))
      if (after !== undefined) kp = later(kp, kept.seek(after, true))
    } else {
      const upper = minKey(after, end)
      const last = kept.chunks.length - 1
      kp = upper === undefined ? [last, kept.chunks[last]!.length] : kept.seek(upper, false)
      if (prefix !== '') kp = earlier(kp, kept.seekPastPrefix(prefix))
      kp = stepPlace(kept, kp, -1)
    }
    const keptAt = (p: Place): string | undefined => {
      const k = kept.chunks[p[0]]?.[p[1]]
      return k !== undefined && within(k) ? k : undefined
    }
    // The live keys, a page of the index at a time, from where the listing begins.
    let liveAfter: string | undefined = reverse ? minKey(after, end) : after
    let live: string[] = []
    let li = 0
    let liveDone = false
    // The index pages strictly after a key: from `start`, then, with `start` itself first
    // when the index holds it.
    if (!reverse && start !== undefined && (after === undefined || compareKeys(after, start) < 0)) {
      liveAfter = start
      if (n.map.has(start)) live = [start]
    }
    const page = Math.min(1000, limit * 2 + 16)
    const nextLive = (): string | undefined => {
      for (;;) {
        if (li < live.length) {
          const k = live[li]!
          if (within(k)) return k
          li++
          // Past the range in the listing's direction: nothing further can be within.
          if (pastEnd(k, prefix, start, end, reverse)) {
            liveDone = true
            live = []
            li = 0
          }
          continue
        }
        if (liveDone) return undefined
        // Keys whose time has run out by now may have been live at the point: the scan is
        // made to pass none over (getAt judges each at the point's time).
        const ttl = n.ttl
        n.ttl = 0
        let res: ReturnType<typeof this.db.keydir.scan>
        try {
          res = this.db.keydir.scan(n, prefix, liveAfter, page, step, false)
        } finally {
          n.ttl = ttl
        }
        live = res.keys
        li = 0
        if (res.next === undefined) liveDone = true
        else liveAfter = res.next
        if (live.length === 0) return undefined
      }
    }
    const out: ListAtResult = { keys: [], entries: [], version: p.version }
    let lastTaken: string | undefined
    for (;;) {
      const a = nextLive()
      const b = keptAt(kp)
      if (a === undefined && b === undefined) break
      let key: string
      if (b === undefined || (a !== undefined && step * compareKeys(a, b) < 0)) {
        key = a!
        li++
      } else if (a === undefined || step * compareKeys(a, b) > 0) {
        key = b
        kp = stepPlace(kept, kp, step)
      } else {
        key = a
        li++
        kp = stepPlace(kept, kp, step)
      }
      const got = this.stateAt(n, key, p, opts.values === true)
      if (got === undefined) continue
      if (out.keys.length === limit) {
        out.next = lastTaken
        break
      }
      out.keys.push(key)
      lastTaken = key
      const e: ListAtResult['entries'][number] = { key, version: got.version }
      if (opts.values) e.value = got.value
      if (got.expiresAt !== undefined) e.expiresAt = got.expiresAt
      out.entries.push(e)
    }
    return out
  }

  /** The key's versions within the history, newest first. */
  history(n: Namespace, key: string, opts: HistoryOptions): HistoryVersion[] {
    const limit = opts.limit ?? 100
    const before = opts.before ?? Number.POSITIVE_INFINITY
    if (!Number.isInteger(limit) || limit < 1)
      fail('INVALID_ARGUMENT', 'limit must be a positive integer')
    if (typeof before !== 'number' || Number.isNaN(before))
      fail('INVALID_ARGUMENT', 'before must be a version')
    const w = this.windowOf(n)
    const from = this.from(n)
    const s = this.db.keydir.slots
    const slot = n.map.get(key)
    // The kept versions, then the live one when it is newer: read from the newest, in place
    // (a hot key keeps a great many, and a page wants the newest few).
    const kept = w?.byKey.get(key)
    const keptCount = kept?.length ?? 0
    const live =
      slot !== undefined && (keptCount === 0 || s.version[slot]! > kept!.at(keptCount - 1).version)
        ? slot
        : undefined
    const length = keptCount + (live === undefined ? 0 : 1)
    const chainAt = (i: number): Kept | number => (i === keptCount ? live! : kept!.at(i))
    const ver = (c: Kept | number) => (typeof c === 'number' ? s.version[c]! : c.version)
    const out: HistoryVersion[] = []
    // A page before a version starts at the newest below it, found, not walked to.
    const start =
      live !== undefined && ver(live) < before
        ? length - 1
        : (kept?.countAtOrBelow(Math.ceil(before) - 1) ?? 0) - 1
    for (let i = start; i >= 0 && out.length < limit; i--) {
      const c = chainAt(i)
      const version = ver(c)
      if (version >= before) continue
      // Superseded at or before the oldest readable point: not part of the history.
      if (i + 1 < length && ver(chainAt(i + 1)) <= from.version) break
      const at = w === undefined ? from.at : w.atOf(version)
      if (typeof c === 'number') {
        const exp = s.expires[c]!
        const h: HistoryVersion = { version, at, value: this.db.readValue(c) }
        if (exp !== 0) h.expiresAt = exp
        out.push(h)
      } else if (c.type === PUT) {
        const h: HistoryVersion = { version, at, value: w!.value(c) }
        if (c.expiresAt !== 0) h.expiresAt = c.expiresAt
        out.push(h)
      } else out.push({ version, at, deleted: true })
    }
    return out
  }

  /** Removes what a path names, when it is one of the window files (for backups). */
  static isWindowFile(name: string): boolean {
    return WINDOW_NAME.test(name) || name === 'WINDOWS'
  }

  static fileOf(nsId: number): string {
    return windowFile(nsId)
  }
}

/**
 * A place in a SortedKeys: chunk, then position in it. Places from seek are ordered as their
 * keys: past a chunk's last key is the next chunk's first, and past the end is the last
 * chunk's length.
 */
type Place = [number, number]

const before = (a: Place, b: Place) => a[0] < b[0] || (a[0] === b[0] && a[1] < b[1])
const later = (a: Place, b: Place): Place => (before(a, b) ? b : a)
const earlier = (a: Place, b: Place): Place => (before(a, b) ? a : b)

/** The place one key on (step 1) or back (-1); before the first, a chunk of -1. */
function stepPlace(keys: SortedKeys, p: Place, step: 1 | -1): Place {
  const [ci, i] = p
  if (step === 1)
    return i + 1 < keys.chunks[ci]!.length || ci + 1 >= keys.chunks.length
      ? [ci, i + 1]
      : [ci + 1, 0]
  if (i > 0) return [ci, i - 1]
  return ci > 0 ? [ci - 1, keys.chunks[ci - 1]!.length - 1] : [-1, 0]
}

function minKey(a: string | undefined, b: string | undefined): string | undefined {
  if (a === undefined) return b
  if (b === undefined) return a
  return compareKeys(a, b) <= 0 ? a : b
}

/** Whether key k, met walking the index in the listing's direction, is past the range's end. */
function pastEnd(
  k: string,
  prefix: string,
  start: string | undefined,
  end: string | undefined,
  reverse: boolean,
): boolean {
  if (!reverse) return end !== undefined && compareKeys(k, end) >= 0
  return (
    (start !== undefined && compareKeys(k, start) < 0) ||
    (prefix !== '' && !k.startsWith(prefix) && compareKeys(k, prefix) < 0)
  )
}

/** A point that cannot name a state: malformed, in the future, above the namespace. */
function badPoint(why: string): never {
  throw new EngineError('INVALID_POINT', why)
}
