// The database: namespaces, the in-memory index, the write path with group commit, reads,
// and the glue to recovery and compaction. engine/FORMAT.md describes the files.
import fs from 'node:fs'
import path from 'node:path'
import { compactAll } from './compaction.js'
import { EngineError, fail } from './errors.js'
import { fsyncDir } from './fsutil.js'
import { HintBuilder, writeHint } from './hint.js'
import { type NamespaceTable, writeNamespaces } from './namespaces-file.js'
import { type Namespace, type Segment, hintFile, segmentFile } from './parts.js'
import {
  DEL,
  ENTRY_HEADER,
  PUT,
  REC_HEADER,
  SEG_HEADER,
  checkEntry,
  sealEntry,
  sealRecord,
  segmentHeader,
} from './record.js'
import type { Dropped } from './segment-scan.js'
import { Slots } from './slots.js'
import { ValueCache } from './value-cache.js'
import { SortedKeys } from './sorted-keys.js'
import type {
  BatchOp,
  BatchOptions,
  DeleteOptions,
  Durability,
  Engine,
  EngineStats,
  GetResult,
  ListOptions,
  ListResult,
  NamespaceInfo,
  OpenOptions,
  PutOptions,
  PutResult,
} from './types.js'
import { compareKeys } from './utf8.js'
import { decodeValue, encodeValue } from './values.js'

const MAX_KEY_BYTES = 512
const MAX_NAMESPACE_BYTES = 512
const GROUP_BUFFER = 256 * 1024

/** Writes accepted together and written with one write call, then one fdatasync. */
interface Group {
  seg: Segment
  /** File offset of buf[0]. */
  base: number
  buf: Buffer
  len: number
  resolves: ((v: any) => void)[]
  rejects: ((e: unknown) => void)[]
  values: unknown[]
}

export interface RepairReport {
  /** Spans of segment files that were damaged and left out. */
  dropped: Dropped[]
}

export interface DbConfig {
  dir: string
  options: OpenOptions
  release: () => void
}

export class Db implements Engine {
  readonly dir: string
  readonly durability: Durability
  readonly segmentBytes: number
  readonly options: OpenOptions
  /** What `repair: true` left out when opening; empty when nothing was damaged. */
  repairReport: RepairReport = { dropped: [] }

  slots = new Slots()
  byName = new Map<string, Namespace>()
  byId = new Map<number, Namespace>()
  table: NamespaceTable = { nextId: 1, list: [] }
  segments = new Map<number, Segment>()
  active!: Segment
  nextSegId = 1
  version = 0

  private pending: Group[] = []
  private cur: Group | null = null
  private spare: Buffer[] = []
  private flushing = false
  private flushScheduled = false
  private dirDirty = false
  private closed = false
  private release: () => void
  private cache: ValueCache | null
  private timer: NodeJS.Timeout | null = null
  private compacting: Promise<void> | null = null
  private compactAgain = false
  private counters = {
    compactions: 0,
    writes: 0,
    fsyncs: 0,
    fsyncTotalMs: 0,
    fsyncLastMs: 0,
    cacheHits: 0,
    cacheMisses: 0,
  }

  constructor(cfg: DbConfig) {
    this.dir = cfg.dir
    this.options = cfg.options
    this.release = cfg.release
    this.durability = cfg.options.durability ?? 'always'
    this.segmentBytes = Math.min(cfg.options.segmentBytes ?? 64 * 1024 * 1024, 2 ** 31)
    const cacheBytes = cfg.options.cacheBytes ?? 64 * 1024 * 1024
    this.cache = cacheBytes > 0 ? new ValueCache(cacheBytes) : null
    if (this.durability === 'interval') {
      this.timer = setInterval(() => void this.syncDirty(), cfg.options.syncIntervalMs ?? 100)
      this.timer.unref()
    }
  }

  // ---- namespaces ----

  async createNamespace(ns: string): Promise<boolean> {
    this.checkOpen()
    checkName(ns)
    if (this.byName.has(ns)) return false
    const id = this.table.nextId++
    this.table.list.push([id, ns])
    writeNamespaces(this.dir, this.table)
    this.addNamespace(id, ns)
    return true
  }

  addNamespace(id: number, name: string): Namespace {
    const n: Namespace = {
      id,
      name,
      map: new Map(),
      keys: new SortedKeys(),
      bytes: 0,
      ttl: 0,
      building: null,
      changes: null,
    }
    this.byName.set(name, n)
    this.byId.set(id, n)
    return n
  }

  async dropNamespace(ns: string): Promise<boolean> {
    this.checkOpen()
    const n = this.byName.get(ns)
    if (!n) return false
    this.table.list = this.table.list.filter(([id]) => id !== n.id)
    writeNamespaces(this.dir, this.table)
    this.byName.delete(ns)
    this.byId.delete(n.id)
    for (const slot of n.map.values()) {
      this.unlive(slot)
      this.cache?.delete(slot)
      this.slots.release(slot)
    }
    n.map.clear()
    return true
  }

  hasNamespace(ns: string): boolean {
    return this.byName.has(ns)
  }

  namespaces(): NamespaceInfo[] {
    const out: NamespaceInfo[] = []
    for (const n of this.byName.values())
      out.push({ name: n.name, keys: n.map.size, bytes: n.bytes })
    return out
  }

  namespaceStats(ns: string): NamespaceInfo | undefined {
    const n = this.byName.get(ns)
    return n ? { name: n.name, keys: n.map.size, bytes: n.bytes } : undefined
  }

  private ns(name: string): Namespace {
    const n = this.byName.get(name)
    if (!n)
      throw new EngineError(
        'NAMESPACE_NOT_FOUND',
        `namespace ${JSON.stringify(name)} does not exist`,
      )
    return n
  }

  // ---- writes ----

  put(ns: string, key: string, value: unknown, opts?: PutOptions): Promise<PutResult> {
    try {
      this.checkOpen()
      const n = this.ns(ns)
      const keyLen = keyBytes(key)
      const expiresAt = expiry(opts?.ttlMs, opts?.expiresAt)
      const { flags, bytes } = encodeValue(value)
      const slot = this.liveSlot(n, key)
      const ifVersion = opts?.ifVersion
      if (ifVersion !== undefined) {
        if (ifVersion !== null && typeof ifVersion !== 'number') {
          fail('INVALID_ARGUMENT', 'ifVersion must be a number or null')
        }
        const current = slot < 0 ? null : this.slots.version[slot]
        if (current !== ifVersion) {
          fail('CONFLICT', `${key}: version is ${current}, expected ${ifVersion}`)
        }
      }
      const version = ++this.version
      const g = this.reserve(REC_HEADER + ENTRY_HEADER + keyLen + bytes.length)
      const at = g.len
      // The slot just looked up is passed on, sparing the index a second lookup.
      this.writeEntry(
        g,
        at + REC_HEADER,
        PUT,
        flags,
        n,
        key,
        keyLen,
        version,
        expiresAt,
        bytes,
        slot < 0 ? undefined : slot,
      )
      sealRecord(g.buf, at, ENTRY_HEADER + keyLen + bytes.length, 1)
      g.len = at + REC_HEADER + ENTRY_HEADER + keyLen + bytes.length
      this.counters.writes++
      return this.await<PutResult>(g, { version, created: slot < 0 })
    } catch (err) {
      return Promise.reject(err)
    }
  }

  delete(ns: string, key: string, opts?: DeleteOptions): Promise<boolean> {
    try {
      this.checkOpen()
      const n = this.ns(ns)
      const keyLen = keyBytes(key)
      const slot = this.liveSlot(n, key)
      if (opts?.ifVersion !== undefined) {
        const current = slot < 0 ? null : this.slots.version[slot]
        if (current !== opts.ifVersion) {
          fail('CONFLICT', `${key}: version is ${current}, expected ${opts.ifVersion}`)
        }
      }
      if (slot < 0) return Promise.resolve(false)
      const version = ++this.version
      const g = this.reserve(REC_HEADER + ENTRY_HEADER + keyLen)
      const at = g.len
      this.writeEntry(g, at + REC_HEADER, DEL, 0, n, key, keyLen, version, 0, null)
      sealRecord(g.buf, at, ENTRY_HEADER + keyLen, 1)
      g.len = at + REC_HEADER + ENTRY_HEADER + keyLen
      this.counters.writes++
      return this.await<boolean>(g, true)
    } catch (err) {
      return Promise.reject(err)
    }
  }

  batch(ops: BatchOp[], opts?: BatchOptions): Promise<{ version: number }> {
    try {
      this.checkOpen()
      if (!Array.isArray(ops)) fail('INVALID_ARGUMENT', 'batch takes an array of operations')
      // Everything is checked before anything is written: all or nothing.
      const prepared: {
        n: Namespace
        key: string
        keyLen: number
        type: number
        flags: number
        bytes: Uint8Array | null
        expiresAt: number
      }[] = []
      let total = REC_HEADER
      for (const op of ops) {
        const n = this.ns(op.ns)
        const keyLen = keyBytes(op.key)
        if (op.type === 'put') {
          const expiresAt = expiry(op.ttlMs, op.expiresAt)
          const { flags, bytes } = encodeValue(op.value)
          const copy = Buffer.from(bytes) // the encoder reuses its buffer
          prepared.push({ n, key: op.key, keyLen, type: PUT, flags, bytes: copy, expiresAt })
          total += ENTRY_HEADER + keyLen + copy.length
        } else if (op.type === 'delete') {
          prepared.push({ n, key: op.key, keyLen, type: DEL, flags: 0, bytes: null, expiresAt: 0 })
          total += ENTRY_HEADER + keyLen
        } else {
          fail(
            'INVALID_ARGUMENT',
            `unknown batch operation type ${JSON.stringify((op as BatchOp).type)}`,
          )
        }
      }
      for (const c of opts?.checks ?? []) {
        const n = this.ns(c.ns)
        keyBytes(c.key)
        const slot = this.liveSlot(n, c.key)
        const current = slot < 0 ? null : this.slots.version[slot]
        if (current !== c.version) {
          fail(
            'CONFLICT',
            `check failed on ${c.ns}/${c.key}: version is ${current}, expected ${c.version}`,
          )
        }
      }
      const version = ++this.version
      if (prepared.length === 0) return Promise.resolve({ version })
      const g = this.reserve(total)
      const at = g.len
      let p = at + REC_HEADER
      for (const e of prepared) {
        this.writeEntry(g, p, e.type, e.flags, e.n, e.key, e.keyLen, version, e.expiresAt, e.bytes)
        p += ENTRY_HEADER + e.keyLen + (e.bytes ? e.bytes.length : 0)
      }
      sealRecord(g.buf, at, total - REC_HEADER, prepared.length)
      g.len = at + total
      this.counters.writes += prepared.length
      return this.await(g, { version })
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
      const slot = this.liveSlot(n, key)
      let current = 0
      let expiresAt = 0
      if (slot >= 0) {
        const v = this.readValue(slot)
        if (typeof v !== 'number') fail('NOT_A_NUMBER', `${key} does not hold a number`)
        current = v as number
        expiresAt = this.slots.expires[slot]
      }
      const next = current + delta
      if (!Number.isFinite(next)) fail('INVALID_ARGUMENT', 'the result is not a finite number')
      const { flags, bytes } = encodeValue(next)
      const version = ++this.version
      const g = this.reserve(REC_HEADER + ENTRY_HEADER + keyLen + bytes.length)
      const at = g.len
      this.writeEntry(g, at + REC_HEADER, PUT, flags, n, key, keyLen, version, expiresAt, bytes)
      sealRecord(g.buf, at, ENTRY_HEADER + keyLen + bytes.length, 1)
      g.len = at + REC_HEADER + ENTRY_HEADER + keyLen + bytes.length
      this.counters.writes++
      return this.await<number>(g, next)
    } catch (err) {
      return Promise.reject(err)
    }
  }

  /** Room for `bytes` more in the current group, starting a new segment when this one is full. */
  private reserve(bytes: number): Group {
    let seg = this.active
    if (seg.end + bytes > this.segmentBytes && seg.end > SEG_HEADER) seg = this.rotate()
    let g = this.cur
    if (!g || g.seg !== seg) {
      g = {
        seg,
        base: seg.end,
        buf: this.spare.pop() ?? Buffer.allocUnsafe(GROUP_BUFFER),
        len: 0,
        resolves: [],
        rejects: [],
        values: [],
      }
      this.cur = g
      this.pending.push(g)
    }
    if (g.len + bytes > g.buf.length) {
      const b = Buffer.allocUnsafe(Math.max(g.len + bytes, g.buf.length * 2))
      g.buf.copy(b, 0, 0, g.len)
      g.buf = b
    }
    seg.end += bytes
    return g
  }

  /** Seals the active segment (its hint is written once its bytes are on disk) and starts a new one. */
  rotate(): Segment {
    const old = this.active
    old.sealed = true
    const seg = this.createSegment(this.nextSegId++)
    this.active = seg
    if (old.written === old.end) this.finishSeal(old)
    return seg
  }

  createSegment(id: number): Segment {
    const file = path.join(this.dir, segmentFile(id))
    const fd = fs.openSync(file, 'w+')
    const header = segmentHeader(id, this.version)
    fs.writeSync(fd, header, 0, header.length, 0)
    const seg: Segment = {
      id,
      file,
      fd,
      written: SEG_HEADER,
      end: SEG_HEADER,
      live: 0,
      hint: new HintBuilder(),
      sealed: false,
      unsynced: true,
      baseVersion: this.version,
    }
    this.segments.set(id, seg)
    this.dirDirty = true
    return seg
  }

  finishSeal(seg: Segment): void {
    if (!seg.hint) return
    writeHint(
      path.join(this.dir, hintFile(seg.id)),
      seg.hint.finish(seg.id, seg.end, seg.baseVersion),
    )
    seg.hint = null
  }

  private writeEntry(
    g: Group,
    at: number,
    type: number,
    flags: number,
    n: Namespace,
    key: string,
    keyLen: number,
    version: number,
    expiresAt: number,
    value: Uint8Array | null,
    /** The key's live slot when the caller has just looked it up. */
    slot: number | undefined = n.map.get(key),
  ): void {
    const b = g.buf
    b.write(key, at + ENTRY_HEADER, keyLen, 'utf8')
    const valueLen = value ? value.length : 0
    if (value) b.set(value, at + ENTRY_HEADER + keyLen)
    sealEntry(b, at, type, flags, keyLen, n.id, version, expiresAt, valueLen)
    const len = ENTRY_HEADER + keyLen + valueLen
    const off = g.base + at
    g.seg.hint!.add(type, flags, keyLen, n.id, version, expiresAt, off, len, b, at + ENTRY_HEADER)
    if (type === PUT) {
      const live = this.setLive(n, key, g.seg, off, len, version, expiresAt, false, slot)
      // What was just written is what is most likely read next (sessions, caches): keep it.
      this.cache?.set(live, b, at, len)
    } else this.remove(n, key)
  }

  // ---- index ----

  /** The key's slot when it holds an unexpired value, else -1 (dropping an expired one). */
  liveSlot(n: Namespace, key: string): number {
    const slot = n.map.get(key)
    if (slot === undefined) return -1
    const exp = this.slots.expires[slot]
    if (exp !== 0 && exp <= Date.now()) {
      this.remove(n, key)
      return -1
    }
    return slot
  }

  /** Points the key at a record; used by writes, recovery and compaction alike. */
  setLive(
    n: Namespace,
    key: string,
    seg: Segment,
    off: number,
    len: number,
    version: number,
    expiresAt: number,
    /** While opening, the sorted key list is built once at the end instead. */
    recovering = false,
    /** The key's current slot when the caller has just looked it up. */
    current: number | undefined = n.map.get(key),
  ): number {
    const s = this.slots
    let slot = current
    if (slot === undefined) {
      slot = s.alloc()
      n.map.set(key, slot)
      if (!recovering) this.keyAdded(n, key)
    } else {
      this.cache?.delete(slot)
      this.unlive(slot)
      n.bytes -= s.len[slot]! - ENTRY_HEADER
      if (s.expires[slot] !== 0) n.ttl--
    }
    s.seg[slot] = seg.id
    s.off[slot] = off
    s.len[slot] = len
    s.version[slot] = version
    s.expires[slot] = expiresAt
    seg.live += len
    n.bytes += len - ENTRY_HEADER
    if (expiresAt !== 0) n.ttl++
    return slot
  }

  /** Keeps the sorted list in step, or notes the key while it is being built after open. */
  private keyAdded(n: Namespace, key: string): void {
    if (n.changes) n.changes.set(key, true)
    else n.keys.insert(key)
  }

  private keyRemoved(n: Namespace, key: string): void {
    if (n.changes) n.changes.set(key, true)
    else n.keys.remove(key)
  }

  remove(n: Namespace, key: string, recovering = false): void {
    const slot = n.map.get(key)
    if (slot === undefined) return
    this.unlive(slot)
    n.bytes -= this.slots.len[slot]! - ENTRY_HEADER
    if (this.slots.expires[slot] !== 0) n.ttl--
    n.map.delete(key)
    if (!recovering) this.keyRemoved(n, key)
    this.cache?.delete(slot)
    this.slots.release(slot)
  }

  private unlive(slot: number): void {
    const seg = this.segments.get(this.slots.seg[slot])
    if (seg) seg.live -= this.slots.len[slot]
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
    const slot = this.liveSlot(n, key)
    if (slot < 0) return undefined
    const value = this.readValue(slot)
    const exp = this.slots.expires[slot]!
    return exp !== 0
      ? { value, version: this.slots.version[slot]!, expiresAt: exp }
      : { value, version: this.slots.version[slot]! }
  }

  stat(
    ns: string,
    key: string,
  ): Promise<{ version: number; bytes: number; expiresAt?: number } | undefined> {
    try {
      this.checkOpen()
      const n = this.ns(ns)
      if (typeof key !== 'string') fail('INVALID_ARGUMENT', 'key must be a string')
      const slot = this.liveSlot(n, key)
      if (slot < 0) return Promise.resolve(undefined)
      const s = this.slots
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
      b = this.readEntry(this.slots.seg[slot]!, this.slots.off[slot]!, this.slots.len[slot]!)
      if (cache) {
        this.counters.cacheMisses++
        cache.set(slot, b, 0, b.length)
      }
    }
    const keyLen = b.readUInt16LE(6)
    return decodeValue(b[5]!, b, ENTRY_HEADER + keyLen, b.length)
  }

  /** The entry's bytes, checked against its checksum. */
  readEntry(segId: number, off: number, len: number): Buffer {
    const seg = this.segments.get(segId)
    if (!seg) throw new EngineError('CORRUPT', `segment ${segId} is missing`)
    let b: Buffer
    if (off >= seg.written) {
      const g = this.pending.find((p) => p.seg === seg && off >= p.base && off < p.base + p.len)
      if (!g)
        throw new EngineError('CORRUPT', `${path.basename(seg.file)}: no record at offset ${off}`)
      b = Buffer.from(g.buf.subarray(off - g.base, off - g.base + len))
    } else {
      b = Buffer.allocUnsafe(len)
      const got = fs.readSync(seg.fd, b, 0, len, off)
      if (got !== len || checkEntry(b, 0, len) !== len) {
        throw new EngineError(
          'CORRUPT',
          `${path.basename(seg.file)}: damaged record at offset ${off}`,
        )
      }
    }
    return b
  }

  list(ns: string, opts?: ListOptions): Promise<ListResult> {
    try {
      this.checkOpen()
      const n = this.ns(ns)
      // A large namespace's sorted list may still be in the making just after open.
      if (n.building) return n.building.then(() => this.list(ns, opts))
      const prefix = opts?.prefix ?? ''
      const after = opts?.after
      const limit = opts?.limit ?? 1000
      if (typeof prefix !== 'string') fail('INVALID_ARGUMENT', 'prefix must be a string')
      if (after !== undefined && typeof after !== 'string')
        fail('INVALID_ARGUMENT', 'after must be a string')
      if (!Number.isInteger(limit) || limit < 1)
        fail('INVALID_ARGUMENT', 'limit must be a positive integer')
      const res = opts?.reverse
        ? this.scanBack(n, prefix, after, limit)
        : this.scan(n, prefix, after, limit)
      return Promise.resolve(res)
    } catch (err) {
      return Promise.reject(err)
    }
  }

  private scan(n: Namespace, prefix: string, after: string | undefined, limit: number): ListResult {
    const chunks = n.keys.chunks
    let [ci, i] =
      after !== undefined && compareKeys(after, prefix) >= 0
        ? n.keys.seek(after, true)
        : n.keys.seek(prefix, false)
    const keys: string[] = []
    const now = n.ttl > 0 ? Date.now() : 0
    const s = this.slots
    for (; ci < chunks.length; ci++, i = 0) {
      const chunk = chunks[ci]
      for (; i < chunk.length; i++) {
        const k = chunk[i]
        if (prefix && !k.startsWith(prefix)) return { keys }
        if (now) {
          const e = s.expires[n.map.get(k)!]
          if (e !== 0 && e <= now) continue
        }
        if (keys.length === limit) return { keys, next: keys[limit - 1] }
        keys.push(k)
      }
    }
    return { keys }
  }

  private scanBack(
    n: Namespace,
    prefix: string,
    after: string | undefined,
    limit: number,
  ): ListResult {
    const chunks = n.keys.chunks
    let [ci, i] = prefix
      ? n.keys.seekPastPrefix(prefix)
      : [chunks.length - 1, chunks[chunks.length - 1].length]
    if (after !== undefined) {
      const [ai, aj] = n.keys.seek(after, false)
      if (ai < ci || (ai === ci && aj < i)) [ci, i] = [ai, aj]
    }
    i--
    const keys: string[] = []
    const now = n.ttl > 0 ? Date.now() : 0
    const s = this.slots
    for (; ci >= 0; ci--, i = ci >= 0 ? chunks[ci].length - 1 : 0) {
      const chunk = chunks[ci]
      for (; i >= 0; i--) {
        const k = chunk[i]
        if (prefix && !k.startsWith(prefix)) return { keys }
        if (now) {
          const e = s.expires[n.map.get(k)!]
          if (e !== 0 && e <= now) continue
        }
        if (keys.length === limit) return { keys, next: keys[limit - 1] }
        keys.push(k)
      }
    }
    return { keys }
  }

  // ---- group commit ----

  private await<T>(g: Group, value: T): Promise<T> {
    const p = new Promise<T>((resolve, reject) => {
      g.resolves.push(resolve)
      g.rejects.push(reject)
    })
    g.values.push(value)
    if (!this.flushScheduled && !this.flushing) {
      this.flushScheduled = true
      setImmediate(this.runFlush)
    }
    return p
  }

  private runFlush = async (): Promise<void> => {
    this.flushScheduled = false
    if (this.flushing) return
    this.flushing = true
    while (this.pending.length > 0) {
      const groups = this.pending
      this.pending = []
      this.cur = null
      try {
        for (const g of groups) {
          let done = 0
          while (done < g.len)
            done += fs.writeSync(g.seg.fd, g.buf, done, g.len - done, g.base + done)
          g.seg.written = g.base + g.len
          g.seg.unsynced = true
        }
        if (this.durability === 'always') {
          if (this.dirDirty) {
            this.dirDirty = false
            fsyncDir(this.dir)
          }
          const seen = new Set<Segment>()
          for (const g of groups) {
            if (seen.has(g.seg)) continue
            seen.add(g.seg)
            await this.sync(g.seg)
          }
        }
        for (const g of groups) {
          if (g.seg.sealed && g.seg.written === g.seg.end) this.finishSeal(g.seg)
        }
        for (const g of groups) {
          for (let i = 0; i < g.resolves.length; i++) g.resolves[i](g.values[i])
          if (g.buf.length === GROUP_BUFFER && this.spare.length < 2) this.spare.push(g.buf)
        }
      } catch (err) {
        const e = new EngineError('CORRUPT', `write failed: ${(err as Error).message}`)
        for (const g of groups) for (const r of g.rejects) r(e)
      }
    }
    this.flushing = false
    this.maybeCompact()
  }

  private sync(seg: Segment): Promise<void> {
    const t0 = performance.now()
    seg.unsynced = false
    return new Promise((resolve, reject) => {
      fs.fdatasync(seg.fd, (err) => {
        if (err) return reject(err)
        const ms = performance.now() - t0
        this.counters.fsyncs++
        this.counters.fsyncTotalMs += ms
        this.counters.fsyncLastMs = ms
        resolve()
      })
    })
  }

  private async syncDirty(): Promise<void> {
    if (this.dirDirty) {
      this.dirDirty = false
      fsyncDir(this.dir)
    }
    for (const seg of this.segments.values()) if (seg.unsynced) await this.sync(seg)
  }

  /** Resolves once every write accepted so far is on disk. */
  async flush(): Promise<void> {
    this.checkOpen()
    await this.drain()
    await this.syncDirty()
  }

  drain(): Promise<void> {
    const last = this.pending[this.pending.length - 1]
    if (!last) return Promise.resolve()
    return this.await<void>(last, undefined)
  }

  // ---- compaction ----

  private maybeCompact(): void {
    if (this.options.autoCompact === false || this.compacting || this.closed) return
    const { diskBytes, deadBytes } = this.stats()
    const ratio = this.options.compactionDeadRatio ?? 0.5
    const min = this.options.compactionMinDeadBytes ?? 16 * 1024 * 1024
    if (deadBytes >= min && deadBytes > diskBytes * ratio) void this.compact().catch(() => {})
  }

  compact(): Promise<void> {
    try {
      this.checkOpen()
    } catch (err) {
      return Promise.reject(err)
    }
    if (this.compacting) {
      // A pass already running may have started before the caller's latest writes.
      this.compactAgain = true
      return this.compacting
    }
    this.compacting = (async () => {
      try {
        do {
          this.compactAgain = false
          await this.drain()
          if (this.closed) return
          if (await compactAll(this)) this.counters.compactions++
        } while (this.compactAgain && !this.closed)
      } finally {
        this.compacting = null
      }
    })()
    return this.compacting
  }

  isClosed(): boolean {
    return this.closed
  }

  // ---- the rest ----

  stats(): EngineStats {
    let keys = 0
    let liveBytes = 0
    for (const n of this.byName.values()) {
      keys += n.map.size
      liveBytes += n.bytes
    }
    let diskBytes = 0
    let live = 0
    for (const seg of this.segments.values()) {
      diskBytes += seg.end
      live += seg.live
    }
    return {
      keys,
      namespaces: this.byName.size,
      liveBytes,
      diskBytes,
      deadBytes: Math.max(0, diskBytes - live),
      segments: this.segments.size,
      ...this.counters,
    }
  }

  async backup(toDir: string): Promise<void> {
    this.checkOpen()
    await this.flush()
    // Copied in one synchronous step, so no write or compaction swap happens half-way.
    fs.mkdirSync(toDir, { recursive: true })
    const copy = (from: string, name: string, bytes: number) => {
      const to = path.join(toDir, name)
      const src = fs.openSync(from, 'r')
      const dst = fs.openSync(to, 'w')
      try {
        const buf = Buffer.allocUnsafe(1024 * 1024)
        for (let off = 0; off < bytes; ) {
          const n = fs.readSync(src, buf, 0, Math.min(buf.length, bytes - off), off)
          if (n === 0) break
          fs.writeSync(dst, buf, 0, n, off)
          off += n
        }
        fs.fsyncSync(dst)
      } finally {
        fs.closeSync(src)
        fs.closeSync(dst)
      }
    }
    for (const seg of this.segments.values()) {
      copy(seg.file, path.basename(seg.file), seg.written)
      const hint = path.join(this.dir, hintFile(seg.id))
      if (!seg.hint && fs.existsSync(hint)) copy(hint, hintFile(seg.id), fs.statSync(hint).size)
    }
    writeNamespaces(toDir, this.table)
    fsyncDir(toDir)
  }

  async close(): Promise<void> {
    if (this.closed) return
    await this.drain()
    this.closed = true
    if (this.compacting) await this.compacting.catch(() => {})
    await this.drain()
    if (this.durability !== 'always') await this.syncDirty()
    if (this.timer) clearInterval(this.timer)
    // Everything is on disk: the active segment gets its hint now, so the next open reads
    // hints only instead of scanning it.
    const active = this.active
    if (active.end > SEG_HEADER && active.written === active.end) {
      active.sealed = true
      this.finishSeal(active)
    }
    for (const seg of this.segments.values()) fs.closeSync(seg.fd)
    this.release()
  }

  checkOpen(): void {
    if (this.closed) throw new EngineError('CLOSED', 'the database is closed')
  }
}

function checkName(ns: string): void {
  if (typeof ns !== 'string' || ns.length === 0 || Buffer.byteLength(ns) > MAX_NAMESPACE_BYTES) {
    fail('INVALID_ARGUMENT', `a namespace name is 1 to ${MAX_NAMESPACE_BYTES} UTF-8 bytes`)
  }
}

function keyBytes(key: string): number {
  if (typeof key !== 'string') fail('INVALID_ARGUMENT', 'key must be a string')
  const n = key.length * 3 <= MAX_KEY_BYTES ? utf8Length(key) : Buffer.byteLength(key)
  if (n === 0 || n > MAX_KEY_BYTES)
    fail('INVALID_ARGUMENT', `a key is 1 to ${MAX_KEY_BYTES} UTF-8 bytes, got ${n}`)
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

function expiry(ttlMs: number | undefined, expiresAt: number | undefined): number {
  if (ttlMs !== undefined) {
    if (typeof ttlMs !== 'number' || !Number.isFinite(ttlMs) || ttlMs <= 0) {
      fail('INVALID_ARGUMENT', 'ttlMs must be a positive number of milliseconds')
    }
    return Date.now() + Math.ceil(ttlMs)
  }
  if (expiresAt !== undefined) {
    if (typeof expiresAt !== 'number' || !Number.isFinite(expiresAt) || expiresAt <= 0) {
      fail('INVALID_ARGUMENT', 'expiresAt must be milliseconds since the Unix epoch')
    }
    return expiresAt
  }
  return 0
}
