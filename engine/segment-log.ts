// The segment log: the files records are appended to, group commit, fsync, sealing, and what
// happens when the disk refuses. Writes are staged in groups; a group's entries become visible
// (the key directory is told through `applied`) only once its bytes are written and, with
// durability `always`, synced. A group that fails is cut off its segment, so the log never
// holds a hole or a write nobody was told about, and it is never applied. FORMAT.md argues
// the rules ("Faults").
import path from 'node:path'
import { EngineError } from './errors.js'
import { HintBuilder, writeHintAsync } from './hint.js'
import { errnoOf, fsyncDir, fsyncDirAsync, io } from './io.js'
import {
  type Manifest,
  type SealedSegment,
  hintCrcOf,
  writeManifest,
  writeManifestAsync,
} from './manifest.js'
import { type Segment, type Staged, hintFile, segmentFile } from './parts.js'
import { Prealloc } from './prealloc.js'
import { SEG_HEADER, segmentHeader } from './record.js'
import type { Durability, EngineHealth } from './types.js'

const GROUP_BUFFER = 256 * 1024
const RETRY_FIRST_MS = 200
const RETRY_MAX_MS = 5000

/** Writes accepted together and written with one write call, then one fdatasync. */
export interface Group {
  seg: Segment
  /** File offset of buf[0]. */
  base: number
  buf: Buffer
  len: number
  staged: Staged[]
  /**
   * The group's outcome, made when the first answer waits for it: every write of the group
   * and every other answer waiting on it share this one promise, so a write costs no promise
   * and no closures of its own (a put without fsync spends more on those than on its bytes).
   */
  outcome: Outcome | null
  /** Writes answered by the outcome, counted as failed writes if it fails. */
  waiting: number
}

/** A promise with its settling functions. */
interface Outcome {
  promise: Promise<void>
  resolve: () => void
  reject: (e: unknown) => void
}

function outcome(): Outcome {
  let resolve!: () => void
  let reject!: (e: unknown) => void
  const promise = new Promise<void>((res, rej) => {
    resolve = res
    reject = rej
  })
  return { promise, resolve, reject }
}

export interface LogHooks {
  /** The group is durable: make its entries visible. */
  applied(g: Group): void
  /** The group failed and was cut off: forget its entries. */
  dropped(g: Group): void
  /** A flush pass ended (compaction may want to start). */
  idle(): void
}

export class SegmentLog {
  segments = new Map<number, Segment>()
  active!: Segment
  nextSegId = 1
  /** Sealed segments as the manifest records them, by id. */
  sealed = new Map<number, SealedSegment>()
  health: EngineHealth = { state: 'ok' }
  /**
   * Segments a compaction replaced, named in every manifest until their files are gone: the
   * manifest that stops listing them as sealed is the one that says to delete them, in the
   * same atomic write, so no failure in between can leave them looking alive.
   */
  removed = new Set<number>()
  /**
   * Segments a sync failed on with acknowledged writes in them (durability `interval` and
   * `none`, where no cut takes the untrusted part away). Their pages may never have reached
   * the disk, and a later sync of the same file would not say so (Linux reports a failed
   * write-back once): they are never sealed, so no hint or manifest entry vouches for them,
   * and the next open reads and checks every record.
   */
  private unsure = new WeakSet<Segment>()
  counters = { writes: 0, fsyncs: 0, fsyncTotalMs: 0, fsyncLastMs: 0, writeFailures: 0 }

  private pending: Group[] = []
  /** The groups being written and synced now. */
  private writing: Group[] = []
  private cur: Group | null = null
  private spare: Buffer[] = []
  private flushing = false
  private flushScheduled = false
  private dirDirty = false
  private closed = false
  /** Hints being written off the event loop, by segment. */
  private seals = new Map<Segment, Promise<void>>()
  /** Segments whose failed tail could not be cut yet: the offset to cut them at. */
  private cuts = new Map<Segment, number>()
  /** Files to put right before writes resume (refuseUntil), oldest first. */
  private redos: (() => void)[] = []
  private retryTimer: NodeJS.Timeout | null = null
  private retryMs = RETRY_FIRST_MS
  /** The database version a new segment's header records. */
  version = () => 0
  /** Zeros ahead of the active segment, so its syncs commit no metadata (prealloc.ts). */
  private pre: Prealloc | null

  constructor(
    readonly dir: string,
    readonly durability: Durability,
    readonly segmentBytes: number,
    private hooks: LogHooks,
  ) {
    // Without syncs there is nothing to make cheaper.
    this.pre = durability === 'none' ? null : new Prealloc(segmentBytes)
  }

  /** Refuses at once while storage is failing: nothing is staged that could not be kept. */
  checkWritable(): void {
    if (this.health.state === 'failed') throw new EngineError('IO_ERROR', this.health.reason)
  }

  /** Set once another process has taken the directory: no write, retry or seal from here on. */
  lockLost: string | undefined

  /** Another process holds the directory now (lock.ts): every write is refused for good. */
  loseLock(reason: string): void {
    this.lockLost = reason
    this.health = { state: 'failed', reason }
  }

  /** Room for `bytes` more in the current group, starting a new segment when this one is full. */
  reserve(bytes: number): Group {
    let seg = this.active
    if (seg.end + bytes > this.segmentBytes && seg.end > SEG_HEADER) {
      try {
        seg = this.rotate()
      } catch (err) {
        throw this.refuse(err, 'start a new segment after', seg.file)
      }
    }
    let g = this.cur
    if (!g || g.seg !== seg) {
      g = {
        seg,
        base: seg.end,
        buf: this.spare.pop() ?? Buffer.allocUnsafe(GROUP_BUFFER),
        len: 0,
        staged: [],
        outcome: null,
        waiting: 0,
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

  /** Resolves with `value` once the group is durable; rejects if it fails. */
  await<T>(g: Group, value: T): Promise<T> {
    return this.wrote(g).then(() => value)
  }

  /**
   * A write of the group is answered: resolves once the group is durable, rejects if it fails.
   * The promise is the group's own, the same for each of its writes.
   */
  wrote(g: Group): Promise<void> {
    g.waiting++
    this.scheduleFlush()
    return this.settled(g)
  }

  private scheduleFlush(): void {
    if (!this.flushScheduled && !this.flushing) {
      this.flushScheduled = true
      setImmediate(this.runFlush)
    }
  }

  /** Resolves once `g` is durable; rejects with its error if it fails. Counts as no write. */
  settled(g: Group): Promise<void> {
    g.outcome ??= outcome()
    return g.outcome.promise
  }

  /** Seals the active segment (its hint is written once its bytes are on disk) and starts a new one. */
  rotate(): Segment {
    const old = this.active
    const seg = this.createSegment(this.nextSegId++)
    old.sealed = true
    this.active = seg
    // The one just left, and any whose seal failed before (its hint could not be written):
    // a retry after a failure rotates too. Those already sealed have no hint to write.
    for (const s of this.segments.values()) if (s.sealed && s.durable === s.end) this.finishSeal(s)
    this.pre?.ahead(seg)
    return seg
  }

  createSegment(id: number): Segment {
    const file = path.join(this.dir, segmentFile(id))
    const fd = io.openSync(file, 'w+')
    const baseVersion = this.version()
    const header = segmentHeader(id, baseVersion)
    try {
      io.writeAllSync(fd, header, 0, header.length, 0)
    } catch (err) {
      io.closeSync(fd)
      try {
        io.rmSync(file)
      } catch {}
      throw err
    }
    const seg: Segment = {
      id,
      file,
      fd,
      written: SEG_HEADER,
      durable: SEG_HEADER,
      end: SEG_HEADER,
      live: 0,
      hint: new HintBuilder(),
      sealed: false,
      unsynced: true,
      baseVersion,
      minVersions: new Map(),
    }
    this.segments.set(id, seg)
    this.dirDirty = true
    return seg
  }

  /**
   * Writes a sealed segment's hint and records it in the manifest. A hint is a shortcut, so
   * a failure here fails no write: the segment keeps its builder and is sealed again later
   * (the next open scans it meanwhile).
   */
  finishSeal(seg: Segment): void {
    if (this.lockLost !== undefined) return
    if (!seg.hint || this.cuts.has(seg) || this.seals.has(seg) || this.unsure.has(seg)) return
    let bytes: Buffer
    try {
      bytes = seg.hint.finish(seg.id, seg.end, seg.baseVersion)
    } catch {
      return
    }
    const file = path.join(this.dir, hintFile(seg.id))
    const done = (this.pre?.trim(seg) ?? Promise.resolve())
      // A hint must never name records the disk may not have: without durability 'always'
      // they may not be synced yet. A failure here is the log's: this sync may be the one
      // told that the log's pages did not reach the disk, and no later one would be.
      .then(() =>
        this.durability === 'always'
          ? undefined
          : io.fdatasync(seg.fd).catch((err) => {
              this.unsure.add(seg)
              throw this.refuse(err, 'sync', seg.file)
            }),
      )
      .then(() => writeHintAsync(file, bytes))
      .then(() => {
        // Compaction waits for seals before it picks segments, so this one is still here;
        // checked all the same, since a manifest naming a removed segment is worse than
        // a hint the next open ignores.
        if (this.segments.get(seg.id) !== seg) return
        this.sealed.set(seg.id, { id: seg.id, size: seg.end, hintCrc: hintCrcOf(bytes) })
        seg.hint = null
        return this.writeManifest()
      })
      .catch(() => {
        // Retried by the next seal (rotate), which a retry after a failure makes too.
      })
      .finally(() => this.seals.delete(seg))
    this.seals.set(seg, done)
  }

  /** Resolves once no hint is being written (finishSeal). */
  async sealsSettled(): Promise<void> {
    while (this.seals.size > 0) await Promise.all(this.seals.values())
  }

  /** Each namespace's version, for the manifest (set by the database). */
  versions: () => [number, number][] = () => []

  /** The manifest as the log stands now. */
  private manifest(): Manifest {
    const sealed = [...this.sealed.values()].sort((a, b) => a.id - b.id)
    const active = this.active?.id ?? 0
    // A segment the write path left with groups not yet durable, or written but not synced
    // (durability `interval`, `none`), or a failed write still to cut, may end in a torn
    // write after a crash: open must know it was being written.
    const writing: number[] = []
    for (const s of this.segments.values())
      if (
        s.id < active &&
        !this.sealed.has(s.id) &&
        (s.durable < s.end || s.unsynced || this.cuts.has(s))
      )
        writing.push(s.id)
    const m: Manifest = { active, sealed, versions: this.versions() }
    if (writing.length > 0) m.writing = writing.sort((a, b) => a - b)
    if (this.removed.size > 0) m.removed = [...this.removed].sort((a, b) => a - b)
    return m
  }

  /** Writes the manifest now, on the event loop: at open, before any request. */
  writeManifestNow(): void {
    writeManifest(this.dir, this.manifest())
  }

  /**
   * Writes the manifest off the event loop (its fsyncs wait behind the disk's other work,
   * which under load takes milliseconds). Writes go one at a time, each with the log as it
   * stands when it starts, so the one a caller awaits holds every change made before the
   * call.
   */
  writeManifest(): Promise<void> {
    if (this.lockLost !== undefined)
      return Promise.reject(new EngineError('IO_ERROR', this.lockLost))
    const run = this.manifestQueue.then(() => writeManifestAsync(this.dir, this.manifest()))
    this.manifestQueue = run.catch(() => {})
    return run
  }
  private manifestQueue: Promise<void> = Promise.resolve()

  private runFlush = async (): Promise<void> => {
    this.flushScheduled = false
    if (this.flushing) return
    this.flushing = true
    while (this.pending.length > 0) {
      const groups = this.pending
      this.writing = groups
      this.pending = []
      this.cur = null
      if (this.lockLost !== undefined) {
        // The directory is another process's now: nothing more is written to it, and nothing
        // is cut from its files either.
        this.reject(groups, new EngineError('IO_ERROR', this.lockLost))
        continue
      }
      // A file to put right first (refuseUntil): these writes may be to a namespace the
      // table on disk does not list.
      if (this.redos.length > 0) {
        this.reject(groups, this.tableError())
        continue
      }
      let step = 'write'
      try {
        for (const g of groups) {
          const clash = this.pre?.clash(g.seg, g.base + g.len)
          if (clash) await clash
        }
        for (const g of groups) {
          io.writeAllSync(g.seg.fd, g.buf, 0, g.len, g.base)
          g.seg.written = g.base + g.len
          g.seg.unsynced = true
        }
        if (this.durability === 'always') {
          step = 'sync'
          if (this.dirDirty) {
            // Cleared first: a segment created during the sync dirties it again.
            this.dirDirty = false
            try {
              await fsyncDirAsync(this.dir)
            } catch (err) {
              this.dirDirty = true
              throw err
            }
          }
          const seen = new Set<Segment>()
          for (const g of groups) {
            if (seen.has(g.seg)) continue
            seen.add(g.seg)
            await this.sync(g.seg)
          }
        }
      } catch (err) {
        this.fail(groups, err, step)
        continue
      }
      // refuseUntil while they were written: not acknowledged, as above, and cut.
      if (this.redos.length > 0) {
        this.fail(groups, this.tableError(), step)
        continue
      }
      if (this.health.state === 'no_space') this.health = { state: 'ok' }
      for (const g of groups) {
        this.hooks.applied(g)
        g.seg.durable = g.base + g.len
      }
      for (const g of groups) {
        if (g.seg.sealed && g.seg.durable === g.seg.end) this.finishSeal(g.seg)
      }
      for (const g of groups) {
        g.outcome?.resolve()
        if (g.buf.length === GROUP_BUFFER && this.spare.length < 2) this.spare.push(g.buf)
      }
      this.pre?.ahead(this.active)
    }
    this.writing = []
    this.flushing = false
    this.hooks.idle()
  }

  /**
   * A write or sync failed: every group not yet acknowledged fails with it, and each segment is
   * cut back to where the first of them began. With durability `always` nothing past that point
   * was acknowledged; after a failed fsync the kernel may have dropped those pages, so none of
   * them is trusted, and the cut removes exactly them.
   */
  private fail(groups: Group[], err: unknown, step: string): void {
    const all = groups.concat(this.pending)
    this.pending = []
    this.cur = null
    const cutAt = new Map<Segment, number>()
    for (const g of all) {
      const c = cutAt.get(g.seg)
      if (c === undefined || g.base < c) cutAt.set(g.seg, g.base)
    }
    for (const [seg, at] of cutAt) {
      seg.end = at
      if (seg.written > at) seg.written = at
      if (seg.durable > at) seg.durable = at
      this.cuts.set(seg, at)
      this.pre?.stop(seg)
    }
    this.cutTails()
    this.reject(all, this.refuse(err, step, all[0]!.seg.file))
  }

  /** Fails every write of `groups` (and every answer waiting on them) with `e`. */
  private reject(groups: Group[], e: EngineError): void {
    for (const g of groups) {
      this.counters.writeFailures += g.waiting
      this.hooks.dropped(g)
      g.outcome?.reject(e)
    }
  }

  /** Cuts failed tails off their segments; those it cannot cut stay listed for the retry. */
  private cutTails(): void {
    for (const [seg, at] of this.cuts) {
      try {
        io.ftruncateSync(seg.fd, at)
        io.fsyncSync(seg.fd)
        this.cuts.delete(seg)
        if (seg.sealed && seg.durable === seg.end) this.finishSeal(seg)
      } catch {
        if (this.health.state !== 'failed')
          this.health = {
            state: 'failed',
            reason: `cannot cut a failed write off ${path.basename(seg.file)}`,
          }
      }
    }
  }

  /**
   * The engine error for an I/O failure, with the health it leaves: a full disk refuses writes
   * until one succeeds again; anything else refuses them until a retry proves the disk works.
   */
  refuse(err: unknown, step: string, file: string): EngineError {
    if (err instanceof EngineError) return err
    if (this.lockLost !== undefined) return new EngineError('IO_ERROR', this.lockLost)
    const code = errnoOf(err) ?? 'EIO'
    const where = `${step} of ${path.basename(file)}`
    // A full disk lifts with the next write that fits, unless something must be put right
    // first (cuts, refuseUntil's redos): then only the retry may lift it.
    const lifts = this.cuts.size === 0 && this.redos.length === 0
    if ((code === 'ENOSPC' || code === 'EDQUOT') && step !== 'sync' && lifts) {
      const reason = `disk full (${code}) during ${where}; writes resume once space is freed`
      this.health = { state: 'no_space', reason }
      return new EngineError('NO_SPACE', reason)
    }
    const reason = `${code} during ${where}; writes are refused until storage works again`
    this.health = { state: 'failed', reason }
    this.scheduleRetry()
    return new EngineError('IO_ERROR', reason)
  }

  /**
   * refuse() for a change to a file other than the log that could not be undone: health is
   * `failed` whatever the errno (a full disk's next write must not lift it), and the retry
   * runs `redo`, which puts the file right, before it lets writes in again.
   */
  refuseUntil(err: unknown, file: string, redo: () => void): EngineError {
    if (this.lockLost !== undefined) return new EngineError('IO_ERROR', this.lockLost)
    this.redos.push(redo)
    const code = errnoOf(err) ?? 'EIO'
    const reason = `${code} while changing ${path.basename(file)}, and undoing it failed too; writes are refused until storage works again`
    this.health = { state: 'failed', reason }
    this.scheduleRetry()
    return new EngineError('IO_ERROR', reason)
  }

  /** Runs refuseUntil's redos, oldest first; one that throws stays, with those after it. */
  private runRedos(): void {
    while (this.redos.length > 0) {
      this.redos[0]!()
      this.redos.shift()
    }
  }

  /** The error for a write refused while refuseUntil's redos wait. */
  private tableError(): EngineError {
    const h = this.health
    return new EngineError('IO_ERROR', h.state === 'ok' ? 'storage failed' : h.reason)
  }

  private scheduleRetry(): void {
    if (this.retryTimer || this.closed) return
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null
      this.retry()
    }, this.retryMs)
    this.retryTimer.unref()
    this.retryMs = Math.min(this.retryMs * 2, RETRY_MAX_MS)
  }

  /**
   * Proves the disk works again before taking writes: cuts what is left to cut, syncs, and
   * moves the write path to a fresh segment (open, write, sync, directory sync all succeed).
   */
  private retry(): void {
    if (this.lockLost !== undefined) return
    if (this.closed || this.health.state !== 'failed' || this.flushing) {
      if (this.health.state === 'failed') this.scheduleRetry()
      return
    }
    try {
      this.runRedos()
      for (const [seg, at] of this.cuts) {
        io.ftruncateSync(seg.fd, at)
        io.fsyncSync(seg.fd)
        this.cuts.delete(seg)
      }
      io.fsyncSync(this.active.fd)
      this.rotate()
      io.fsyncSync(this.active.fd)
      fsyncDir(this.dir)
      this.dirDirty = false
      this.health = { state: 'ok' }
      this.retryMs = RETRY_FIRST_MS
    } catch (err) {
      const code = errnoOf(err) ?? 'EIO'
      this.health = {
        state: 'failed',
        reason: `${code} while retrying storage; writes are refused until it works again`,
      }
      this.scheduleRetry()
    }
  }

  private sync(seg: Segment): Promise<void> {
    const t0 = performance.now()
    return io.fdatasync(seg.fd).then(() => {
      seg.unsynced = false
      const ms = performance.now() - t0
      this.counters.fsyncs++
      this.counters.fsyncTotalMs += ms
      this.counters.fsyncLastMs = ms
    })
  }

  /** Syncs what durability `interval` and `none` left unsynced; failing puts storage in `failed`. */
  async syncDirty(): Promise<void> {
    try {
      if (this.dirDirty) {
        fsyncDir(this.dir)
        this.dirDirty = false
      }
      for (const seg of this.segments.values()) {
        if (!seg.unsynced) continue
        try {
          await this.sync(seg)
        } catch (err) {
          this.unsure.add(seg)
          throw err
        }
      }
    } catch (err) {
      throw this.refuse(err, 'sync', this.active.file)
    }
  }

  /** Resolves once every write accepted so far has settled (durable or failed). */
  drain(): Promise<void> {
    const last = this.pending[this.pending.length - 1] ?? this.writing[this.writing.length - 1]
    if (!last) return Promise.resolve()
    this.scheduleFlush()
    return this.settled(last).catch(() => {})
  }

  /**
   * Stops for good. Works in every state: what cannot be written now (the active segment's
   * hint, say) is left to the next open, which scans instead.
   */
  async close(): Promise<void> {
    this.closed = true
    if (this.retryTimer) clearTimeout(this.retryTimer)
    await this.drain()
    // A failed tail still on disk would come back at the next open: one more try to cut it,
    // and to put right what refuseUntil left wrong; not in a directory another process has.
    if (this.lockLost === undefined) {
      this.cutTails()
      try {
        this.runRedos()
      } catch {}
    }
    if (this.durability !== 'always' && this.health.state === 'ok')
      await this.syncDirty().catch(() => {})
    const active = this.active
    if (
      active &&
      active.end > SEG_HEADER &&
      active.durable === active.end &&
      this.health.state === 'ok'
    ) {
      active.sealed = true
      this.finishSeal(active)
    }
    await this.sealsSettled()
    await this.manifestQueue
    await this.pre?.settled()
    for (const seg of this.segments.values()) {
      try {
        io.closeSync(seg.fd)
      } catch {}
    }
  }
}
