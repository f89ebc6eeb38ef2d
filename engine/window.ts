// A namespace's history window in memory: its version-to-time index (one pair per commit)
// and, per key, the versions its writes superseded, each pointing into the namespace's
// window file (window-file.ts). Reads at a point combine these with the live index: the
// state of a key at version V is its newest version at or below V, live or kept here.
//
// Records leave from the oldest: once their commit time is past the window, or while the
// window holds more than its byte bound. Every version dropped so was superseded at or before
// the dropped record's version, so every point from there on still finds, for each key, its
// newest version at or below it: that record's version and time become the floor, the oldest
// readable point. The file keeps the dropped records until reclaim() rewrites it.
import path from 'node:path'
import { EngineError } from './errors.js'
import { io } from './io.js'
import { KeptChain } from './kept-chain.js'
import {
  DEL,
  checkEntry,
  copyBytes,
  entryExpiresAt,
  entryFlags,
  entryKey,
  entryLength,
  entryNsId,
  entryType,
  entryValueAt,
  entryVersion,
} from './record.js'
import { SortedKeys } from './sorted-keys.js'
import { sortKeys } from './utf8.js'
import type { ValueCache } from './value-cache.js'
import { decodeValue } from './values.js'
import {
  type FoundWindow,
  WIN_HEADER,
  WREC_HEADER,
  type WindowSetting,
  scanWindow,
  sealWindowRecord,
  windowFile,
  windowHeader,
} from './window-file.js'

/** One superseded version (or tombstone) kept for history, where it is in the window file. */
export interface Kept {
  key: string
  version: number
  type: number
  flags: number
  expiresAt: number
  off: number
  len: number
  /** Its place in the windows' value cache (shared, so checked against nsId and version). */
  cid: number
}

/** Ids of the value cache, given round: a read checks that what it finds is its own. */
const CIDS = 1 << 18
let nextCid = 0

/** One commit of the namespace: its version, time, and what it superseded. */
interface Rec {
  version: number
  at: number
  off: number
  len: number
  items: Kept[]
}

export class Window {
  readonly file: string
  fd = -1
  /** Bytes of the file: where the next record goes. */
  size = WIN_HEADER
  /** The oldest readable point: every version superseded at or before it has been dropped. */
  floorVersion = 0
  floorAt = 0
  /** Records in commit order, from `head` on (those before were dropped). */
  private recs: Rec[] = []
  private head = 0
  /** Per key, its kept versions, oldest first. */
  readonly byKey = new Map<string, KeptChain<Kept>>()
  /** Bytes of the records held (their headers and entries): the namespace's history bytes. */
  held = 0
  /**
   * The keys of byKey in UTF-8 order, made when a listing first needs them and kept in order
   * from then on as keys come and go: sorting them again for each key new to the window made
   * a walk in pages under writes several times slower.
   */
  private sorted: SortedKeys | null = null
  /** Whether records were appended since the file was last synced. */
  dirty = false
  /** The record being made (add, then commit): its header's room, then its entries. */
  private pending = Buffer.allocUnsafe(4096)
  private pendingLen = WREC_HEADER
  private pendingItems: Kept[] = []

  constructor(
    dir: string,
    readonly nsId: number,
    public setting: WindowSetting,
    private readonly cache: ValueCache | null = null,
  ) {
    this.file = path.join(dir, windowFile(nsId))
  }

  /** The version of the newest record, or the floor's. */
  get lastVersion(): number {
    return this.recs.length > this.head
      ? this.recs[this.recs.length - 1]!.version
      : this.floorVersion
  }

  /** The time of the newest record, or the floor's. */
  get lastAt(): number {
    return this.recs.length > this.head ? this.recs[this.recs.length - 1]!.at : this.floorAt
  }

  /** A new, empty window from this point on: its file is written and synced. */
  create(version: number, at: number): void {
    this.floorVersion = version
    this.floorAt = at
    const h = windowHeader(version, at)
    io.writeFileAtomicSync(this.file, h)
    this.fd = io.openSync(this.file, 'r+')
    this.size = h.length
  }

  /** Loads the file: false when there is none or its header is damaged (the window starts over). */
  load(): boolean {
    if (!io.existsSync(this.file)) return false
    const buf = io.readFileSync(this.file)
    const found = scanWindow(buf)
    if (found === undefined) return false
    this.fd = io.openSync(this.file, 'r+')
    // A crash may have cut an append short: the file ends at its last intact record.
    if (found.end < buf.length) {
      io.ftruncateSync(this.fd, found.end)
      io.fsyncSync(this.fd)
    }
    this.take(found, buf)
    return true
  }

  private take(found: FoundWindow, buf: Buffer): void {
    this.floorVersion = found.floorVersion
    this.floorAt = found.floorAt
    this.size = found.end
    for (const r of found.records) {
      const items = r.entries.map((q) => keptAt(buf, q))
      this.index({ version: r.version, at: r.at, off: r.off, len: r.len, items })
    }
  }

  private index(r: Rec): void {
    this.recs.push(r)
    this.held += r.len
    for (const it of r.items) {
      let chain = this.byKey.get(it.key)
      if (chain === undefined) {
        chain = new KeptChain()
        this.byKey.set(it.key, chain)
        this.sorted?.insert(it.key)
      }
      chain.add(it)
    }
  }

  /** Adds the entry at src[at, at + len) of `key` to the record being made. */
  add(key: string, src: Buffer, at: number, len: number): void {
    if (this.pendingLen + len > this.pending.length) {
      const bigger = Buffer.allocUnsafe(Math.max(this.pending.length * 2, this.pendingLen + len))
      this.pending.copy(bigger, 0, 0, this.pendingLen)
      this.pending = bigger
    }
    copyBytes(src, at, at + len, this.pending, this.pendingLen)
    nextCid = (nextCid + 1) % CIDS
    this.pendingItems.push({
      key,
      version: entryVersion(src, at),
      type: entryType(src, at),
      flags: entryFlags(src, at),
      expiresAt: entryExpiresAt(src, at),
      off: this.pendingLen,
      len,
      cid: nextCid,
    })
    this.pendingLen += len
  }

  /**
   * Appends the record being made, for the commit at `version` and time `at`. A disk that
   * refuses it costs history, never the write (it is durable already): the window starts
   * over from this point.
   */
  commit(version: number, at: number): void {
    const items = this.pendingItems
    const len = this.pendingLen
    this.pendingItems = []
    this.pendingLen = WREC_HEADER
    if (this.fd < 0) return
    const b = this.pending
    sealWindowRecord(b, len, version, at, items.length)
    try {
      io.writeAllSync(this.fd, b, 0, len, this.size)
    } catch {
      this.restart(version, at)
      return
    }
    for (const it of items) it.off += this.size
    this.index({ version, at, off: this.size, len, items })
    this.size += len
    this.dirty = true
    if (this.pending.length > 1 << 20) this.pending = Buffer.allocUnsafe(4096)
  }

  /** One commit's record of whole entries (each a buffer of its own). */
  append(version: number, at: number, entries: Buffer[]): void {
    for (const e of entries) this.add(entryKey(e, 0), e, 0, e.length)
    this.commit(version, at)
  }

  /** Forgets everything: history begins again at this point. */
  restart(version: number, at: number): void {
    this.recs = []
    this.head = 0
    this.byKey.clear()
    this.sorted = null
    this.held = 0
    this.floorVersion = version
    this.floorAt = at
    try {
      if (this.fd >= 0) io.closeSync(this.fd)
    } catch {}
    this.fd = -1
    try {
      this.create(version, at)
    } catch {
      // No file: the next open starts the window again; appends meanwhile fail the same way.
    }
  }

  /** Drops the records past the window's time or beyond its byte bound, oldest first. */
  expire(now: number): void {
    const cutoff = now - this.setting.seconds * 1000
    while (this.head < this.recs.length) {
      const r = this.recs[this.head]!
      if (r.at > cutoff && this.held <= this.setting.bytes) break
      this.drop(r)
    }
    if (this.head > 1024 && this.head * 2 > this.recs.length) {
      this.recs = this.recs.slice(this.head)
      this.head = 0
    }
  }

  private drop(r: Rec): void {
    this.head++
    this.held -= r.len
    this.floorVersion = r.version
    this.floorAt = r.at
    for (const it of r.items) {
      const chain = this.byKey.get(it.key)!
      chain.remove(it)
      if (chain.length === 0) {
        this.byKey.delete(it.key)
        this.sorted?.remove(it.key)
      }
    }
  }

  /**
   * The oldest readable point, given the window's time as of `now` (once expired to it: every
   * record left is younger than the window, so the state at its start is the floor's).
   */
  from(now: number): { version: number; at: number } {
    return {
      version: this.floorVersion,
      at: Math.max(this.floorAt, now - this.setting.seconds * 1000),
    }
  }

  /** The namespace's version at time `t`: that of the newest commit at or before it. */
  versionAt(t: number): number {
    let lo = this.head
    let hi = this.recs.length
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (this.recs[mid]!.at <= t) lo = mid + 1
      else hi = mid
    }
    return lo > this.head ? this.recs[lo - 1]!.version : this.floorVersion
  }

  /** When version `v` was committed: the time of the first commit that reached it. */
  atOf(v: number): number {
    if (v <= this.floorVersion) return this.floorAt
    let lo = this.head
    let hi = this.recs.length
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (this.recs[mid]!.version < v) lo = mid + 1
      else hi = mid
    }
    return lo < this.recs.length ? this.recs[lo]!.at : this.recs[this.recs.length - 1]!.at
  }

  /** The key's newest kept version at or below `v`. */
  latest(key: string, v: number): Kept | undefined {
    return this.byKey.get(key)?.latest(v)
  }

  /** The kept keys in UTF-8 order. */
  keys(): SortedKeys {
    if (this.sorted === null) {
      const sorted = sortKeys([...this.byKey.keys()])
      this.sorted = SortedKeys.from(sorted.keys, sorted.wide)
    }
    return this.sorted
  }

  /** A kept version's value, read from the file (or the cache) and checked. */
  value(it: Kept): unknown {
    let b = this.cache?.get(it.cid)
    if (b === undefined || entryNsId(b, 0) !== this.nsId || entryVersion(b, 0) !== it.version) {
      b = Buffer.allocUnsafe(it.len)
      const got = io.readSync(this.fd, b, 0, it.len, it.off)
      if (got !== it.len || checkEntry(b, 0, it.len) !== it.len)
        throw new EngineError(
          'CORRUPT',
          `${path.basename(this.file)}: damaged record at offset ${it.off}`,
        )
      this.cache?.set(it.cid, b, 0, it.len)
    }
    return decodeValue(entryFlags(b, 0), b, entryValueAt(b, 0), it.len)
  }

  sync(): void {
    if (!this.dirty || this.fd < 0) return
    this.dirty = false
    io.fsyncSync(this.fd)
  }

  /** sync(), off the event loop. */
  async syncAsync(): Promise<void> {
    if (!this.dirty || this.fd < 0) return
    this.dirty = false
    try {
      await io.fsync(this.fd)
    } catch (err) {
      this.dirty = true
      throw err
    }
  }

  /**
   * Rewrites the file without the records dropped since it was written, once they take more
   * than what is held: the header names the floor, and the records kept follow as they were,
   * moved up by what went. The kept part is copied beside it off the event loop and synced;
   * then, in one step, what was appended meanwhile is copied too, the header written, the
   * copy synced (little is left to sync) and renamed over the file. A crash leaves the old
   * file, or the new one: both answer the same points.
   */
  async reclaim(): Promise<void> {
    if (this.fd < 0) return
    const start = this.head < this.recs.length ? this.recs[this.head]!.off : this.size
    const garbage = start - WIN_HEADER
    if (garbage < 4096 || garbage < this.size - start) return
    const fd = this.fd
    const copiedTo = this.size
    const tmp = `${this.file}.tmp`
    const out = io.openSync(tmp, 'w')
    const shift = start - WIN_HEADER
    let done = false
    try {
      const buf = Buffer.allocUnsafe(1024 * 1024)
      for (let pos = start; pos < copiedTo; ) {
        const n = await io.read(fd, buf, 0, Math.min(buf.length, copiedTo - pos), pos)
        if (n <= 0 || this.fd !== fd) return
        await io.writeAll(out, buf, 0, n, pos - shift)
        pos += n
      }
      await io.fsync(out)
      // A failed append started the window over meanwhile: this copy is of another file.
      if (this.fd !== fd) return
      const late = this.size - copiedTo
      if (late > 0) {
        const more = Buffer.allocUnsafe(late)
        if (io.readSync(fd, more, 0, late, copiedTo) !== late) return
        io.writeAllSync(out, more, 0, late, copiedTo - shift)
      }
      const h = windowHeader(this.floorVersion, this.floorAt)
      io.writeAllSync(out, h, 0, h.length, 0)
      io.fsyncSync(out)
      io.closeSync(out)
      done = true
      io.renameSync(tmp, this.file)
    } catch {
      return // the old file stays, as good as before
    } finally {
      if (!done) {
        try {
          io.closeSync(out)
          io.rmSync(tmp)
        } catch {}
      }
    }
    io.closeSync(fd)
    this.fd = io.openSync(this.file, 'r+')
    for (let i = this.head; i < this.recs.length; i++) {
      const r = this.recs[i]!
      r.off -= shift
      for (const it of r.items) it.off -= shift
    }
    this.recs = this.recs.slice(this.head)
    this.head = 0
    this.size -= shift
  }

  /** Bytes of the file (what history takes on disk). */
  diskBytes(): number {
    return this.fd < 0 ? 0 : this.size
  }

  close(): void {
    if (this.fd < 0) return
    try {
      io.closeSync(this.fd)
    } catch {}
    this.fd = -1
  }

  /** Drops the records above `version`: a log that lost writes the window had (see FORMAT.md). */
  cutAbove(version: number, at: number): void {
    if (this.lastVersion > version) this.restart(version, at)
  }
}

/** The entry at buf[q] as kept at file offset `fileOff` (q by default). */
function keptAt(buf: Buffer, q: number, fileOff = q): Kept {
  nextCid = (nextCid + 1) % CIDS
  return {
    key: entryKey(buf, q),
    version: entryVersion(buf, q),
    type: entryType(buf, q),
    flags: entryFlags(buf, q),
    expiresAt: entryExpiresAt(buf, q),
    off: fileOff,
    len: entryLength(buf, q),
    cid: nextCid,
  }
}

export const isTombstone = (it: Kept) => it.type === DEL
