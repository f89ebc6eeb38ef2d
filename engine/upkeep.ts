// Upkeep: when compaction passes, index checkpoints and folds run. Passes start by themselves
// once enough of the log is garbage, checkpoints once enough log has been written since
// the last one, folds once a namespace holds enough keys as strings (after a log replay, and
// as new keys come); compaction.ts, checkpoint.ts and fold.ts do the work.
import path from 'node:path'
import { CHECKPOINT_FILE, writeCheckpoint } from './checkpoint.js'
import { compactAll } from './compaction.js'
import type { DbCore } from './db-core.js'
import { asEngineError } from './errors.js'
import { foldAlone, wantsFold } from './fold.js'
import { io } from './io.js'
import { diskUse } from './parts.js'
import type { OpenOptions } from './types.js'
import type { Windows } from './windows.js'

/**
 * How much log passes between looks at the namespaces for one that wants a fold: a look walks
 * the namespaces, and a namespace gains at most some 30,000 keys of 100 bytes meanwhile.
 */
const FOLD_LOOK_BYTES = 4 * 1024 * 1024

/** The first wait before a fold that gave up is tried again, and the longest. */
const FOLD_RETRY_MS = 1000
const FOLD_RETRY_MAX_MS = 60_000

/** The database as upkeep sees it: the passes' view, its options and history windows. */
export interface UpkeepHost extends DbCore {
  readonly options: OpenOptions
  readonly windows: Windows
}

export class Upkeep {
  private compacting: Promise<void> | null = null
  private checkpointing: Promise<boolean> | null = null
  /** Namespaces folding on their own (fold.ts), one after another. */
  private folding: Promise<void> | null = null
  /** A fold that gave up is tried again (retryFolds). */
  private foldRetry: NodeJS.Timeout | undefined = undefined
  private foldRetryMs = FOLD_RETRY_MS
  /** Bytes the write path has made durable, and that count when the last checkpoint began. */
  private logBytes = 0
  private logBytesAtCheckpoint = 0
  /** A compaction replaced segments since the last checkpoint, which no longer applies. */
  private checkpointStale = false
  private checkpointCounters = { checkpoints: 0, checkpointBytes: 0 }
  /** `logBytes` when the namespaces were last looked at for one that wants a fold. */
  private foldLookedAt = 0
  /** Bytes of the checkpoint last written, or of the one open loaded; -1 until looked at. */
  private checkpointSize = -1
  private compactAgain = false
  /** A full pass was asked for (by compact()) and has not started yet. */
  private wantFull = false
  /**
   * The dead bytes a pass that freed little left behind (0 after one that freed enough): what
   * it could not free is mostly tombstones it must keep, which the next pass would only
   * rewrite again, so one starts by itself only once garbage has grown past them.
   */
  private futile = 0

  constructor(private readonly db: UpkeepHost) {}

  /** A group of `bytes` was made durable. */
  wrote(bytes: number): void {
    this.logBytes += bytes
  }

  /** Writes paused: the moment for work that was waiting. */
  idle(): void {
    this.maybeCompact()
    this.maybeCheckpoint()
    this.maybeFold()
  }

  /**
   * Open is done: a namespace rebuilt by a log replay holds every key as a string, and folds
   * into a base once its sorted list is built, without waiting for writes.
   */
  opened(): void {
    const building = [...this.db.keydir.byName.values()].map((n) => n.building)
    this.foldWanting(Promise.all(building).then(() => {}))
  }

  // ---- folds ----

  /** Once per FOLD_LOOK_BYTES of log, the namespaces that want a fold get one. */
  private maybeFold(): void {
    if (this.folding || this.foldRetry !== undefined || this.db.isClosed()) return
    if (this.logBytes - this.foldLookedAt < FOLD_LOOK_BYTES) return
    this.foldLookedAt = this.logBytes
    this.foldWanting(Promise.resolve())
  }

  /**
   * After `first`, folds each namespace that wants it, one at a time. A checkpoint that runs
   * meanwhile folds the others it walks; a namespace folding alone is not among them
   * (wantsFold).
   */
  private foldWanting(first: Promise<void>): void {
    const db = this.db
    this.folding = first
      .then(async () => {
        // Until none wants one: keys written during a fold can make its namespace want the
        // next, and the writes that would have looked again may have stopped.
        for (let again = true; again; ) {
          again = false
          for (const n of [...db.keydir.byName.values()]) {
            if (db.isClosed()) return
            if (!wantsFold(n)) continue
            if (await foldAlone(db, n)) {
              again = true
              this.foldRetryMs = FOLD_RETRY_MS
            } else this.retryFolds()
          }
        }
      })
      .catch(() => {})
      .finally(() => {
        this.folding = null
      })
  }

  /**
   * A fold gave up under a load of new keys (fold.ts, `overrun`): it is tried again after a
   * while, each wait twice the last, so a long load pays for few walks, and the keys still
   * fold once it ends, with no write to look again.
   */
  private retryFolds(): void {
    if (this.foldRetry !== undefined || this.db.isClosed()) return
    this.foldRetry = setTimeout(() => {
      this.foldRetry = undefined
      if (!this.folding) this.foldWanting(Promise.resolve())
    }, this.foldRetryMs)
    this.foldRetry.unref()
    this.foldRetryMs = Math.min(this.foldRetryMs * 2, FOLD_RETRY_MAX_MS)
  }

  /** Resolves once no fold runs alone. */
  async folded(): Promise<void> {
    while (this.folding) await this.folding
  }

  /** Folds now what wants a fold, a retry waiting included (Db.indexReady). */
  async foldNow(): Promise<void> {
    await this.folded()
    clearTimeout(this.foldRetry)
    this.foldRetry = undefined
    if (!this.db.isClosed()) this.foldWanting(Promise.resolve())
    await this.folded()
  }

  // ---- compaction ----

  private maybeCompact(): void {
    if (this.compacting || this.db.isClosed()) return
    // Db.compact refuses once the lock is lost: so does a pass that would start by itself.
    if (this.db.log.lockLost !== undefined) return
    // A pass started here rewrites only the segments with most garbage (chooseSegments).
    if (this.garbageDue()) void this.compact(false).catch(() => {})
  }

  /** Whether enough of the disk is dead for a pass to start by itself. */
  private garbageDue(): boolean {
    const options = this.db.options
    if (options.autoCompact === false) return false
    // Asked after every group that leaves the log idle: the two figures it needs, not the
    // whole of stats() (keys, history files, counters), which the put path paid for.
    const { diskBytes, deadBytes } = diskUse(this.db.segments)
    const ratio = options.compactionDeadRatio ?? 0.2
    const min = this.minDeadBytes()
    return deadBytes >= min && deadBytes > diskBytes * ratio && deadBytes >= this.futile + min / 4
  }

  /** The least garbage that starts a pass by itself. */
  private minDeadBytes(): number {
    return this.db.options.compactionMinDeadBytes ?? 16 * 1024 * 1024
  }

  /** A compaction pass (Db.compact): `full` rewrites every sealed segment. */
  compact(full: boolean): Promise<void> {
    const db = this.db
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
          await db.drain()
          if (db.isClosed()) return
          if (db.damaged) throw db.damaged
          db.compactionEpoch++
          freed = await compactAll(db, whole).catch((err) => {
            throw asEngineError(err, 'compaction')
          })
        } while (this.compactAgain && !db.isClosed())
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
        } else if (!db.isClosed()) this.futile = diskUse(db.segments).deadBytes
        // Expired history is reclaimed with the log's garbage.
        if (!db.isClosed()) await db.windows.reclaim().catch(() => {})
        // The checkpoint names segments the pass replaced: write one that names the new ones.
        this.maybeCheckpoint()
      }
    })()
    return this.compacting
  }

  isCompacting(): boolean {
    return this.compacting !== null
  }

  /** A pass replaced segments: the checkpoint names some that are gone. */
  compacted(): void {
    this.checkpointStale = true
  }

  /** Resolves once no compaction pass is running (a pass may start again at any write). */
  async compactionSettled(): Promise<void> {
    while (this.compacting) await this.compacting.catch(() => {})
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
    const db = this.db
    if (this.checkpointing || this.compacting || db.isClosed()) return
    if (db.log.health.state !== 'ok') return
    const every = db.options.checkpointBytes ?? 64 * 1024 * 1024
    if (every <= 0) return
    const grown = this.logBytes - this.logBytesAtCheckpoint
    const last = this.lastCheckpointSize()
    const due = Math.max(every, last)
    if (grown >= (this.checkpointStale ? due / 16 : due)) return void this.checkpoint()
  }

  /** A checkpoint now, after the one running, if any (Db.checkpoint). */
  async checkpoint(): Promise<boolean> {
    const db = this.db
    while (this.checkpointing) await this.checkpointing
    if (db.isClosed()) return false
    const bytesAtStart = this.logBytes
    const stale = this.checkpointStale
    this.checkpointStale = false
    this.checkpointing = writeCheckpoint(db, false).then((ok) => {
      this.checkpointing = null
      if (ok) {
        this.logBytesAtCheckpoint = bytesAtStart
        db.checkpointCurrent = true
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
      if (this.db.openedFrom === 'checkpoint') {
        try {
          this.checkpointSize = io.sizeOf(path.join(this.db.dir, CHECKPOINT_FILE))
        } catch {}
      }
    }
    return this.checkpointSize
  }

  /** Checkpoints written since open, and the size of the last. */
  checkpointStats(): { checkpoints: number; checkpointBytes: number } {
    return { ...this.checkpointCounters }
  }

  /** At close, once writes have stopped: waits for the pass and the checkpoint running. */
  async settle(): Promise<void> {
    if (this.compacting) await this.compacting.catch(() => {})
    if (this.checkpointing) await this.checkpointing
    clearTimeout(this.foldRetry)
    this.foldRetry = undefined
    await this.folded()
  }

  /**
   * At close, once everything is on disk: a checkpoint of the whole index, so the next open
   * reads one file and replays nothing. Only on a healthy disk: otherwise the last
   * checkpoint stays, still valid; and not when the one on disk already holds it all.
   */
  async closingCheckpoint(): Promise<void> {
    const db = this.db
    const unchanged =
      db.checkpointCurrent && !this.checkpointStale && this.logBytes === this.logBytesAtCheckpoint
    if (db.log.health.state === 'ok' && !unchanged) await writeCheckpoint(db, true)
  }
}
