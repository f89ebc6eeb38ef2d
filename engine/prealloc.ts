// Zero-filling ahead of the active segment. On ext4 (and most file systems) an fdatasync after
// an append must also commit the file's new size, which waits for the journal, and a journal
// commit first flushes whatever other files have dirty (compaction's output, hints, the
// checkpoint): the log's sync then takes milliseconds instead of a tenth of one. Writing into
// space that already holds synced zeros changes no metadata, so its fdatasync flushes the
// log's own pages only. The zeros are written a step ahead of the log, off the event loop;
// what is left of them is cut off when the segment is sealed. FORMAT.md ("Preallocation")
// says how an open tells zeros that were never written over from damage.
import { io } from './io.js'
import type { Segment } from './parts.js'

/** Zeros are written this much at a time... */
const STEP = 1024 * 1024
/** ...once fewer than this many lie ahead of what the log has taken. */
const AHEAD = 2 * STEP

export class Prealloc {
  /** The segment being filled, and how far its synced zeros reach. */
  private seg: Segment | null = null
  private zeroed = 0
  /** The fill in flight, and where it starts. */
  private job: Promise<void> | null = null
  private from = 0
  /** Segments with zeros past their data: cut back at their seal. */
  private filled = new WeakSet<Segment>()
  /** Segments not to fill any more: a fill failed, or a failed write was cut off. */
  private stopped = new WeakSet<Segment>()

  /** `limit`: a segment's size, past which nothing is filled. */
  constructor(private limit: number) {}

  /** Starts filling ahead of `seg` when the zeros ahead of it run short. */
  ahead(seg: Segment): void {
    if (this.job !== null || seg.sealed || this.stopped.has(seg)) return
    if (this.seg !== seg) {
      this.seg = seg
      this.zeroed = 0
    }
    if (this.zeroed >= seg.end + AHEAD) return
    // Never below what the log has taken: those bytes are written by a flush.
    const from = Math.max(this.zeroed, seg.end)
    const to = Math.min(from + STEP, this.limit)
    if (to <= from) return
    this.from = from
    this.filled.add(seg)
    this.job = io.zeroFill(seg.file, from, to).then(
      () => {
        if (this.seg === seg) this.zeroed = to
        this.job = null
      },
      () => {
        // A full or failing disk: the log appends as it would without zeros, and meets the
        // error itself if the disk still refuses.
        this.stopped.add(seg)
        this.job = null
      },
    )
  }

  /**
   * What a flush about to write `seg` up to `end` must wait for: a fill in flight over that
   * space, which would otherwise race the write (null when there is none).
   */
  clash(seg: Segment, end: number): Promise<void> | null {
    return this.job !== null && this.seg === seg && end > this.from ? this.job : null
  }

  /** Fills `seg` no more: its tail was cut after a failed write. */
  stop(seg: Segment): void {
    this.stopped.add(seg)
  }

  /**
   * At a seal: once no fill runs over `seg`, cuts its zeros off past `seg.end`. A failure is
   * left to the next open, which cuts a sealed segment back to the size the manifest gives.
   */
  async trim(seg: Segment): Promise<void> {
    if (!this.filled.has(seg)) return
    if (this.job !== null && this.seg === seg) await this.job
    this.filled.delete(seg)
    this.stopped.add(seg)
    try {
      io.trimSync(seg.fd, seg.end)
    } catch {}
  }

  /** Resolves once no fill is in flight (close waits for it before closing files). */
  async settled(): Promise<void> {
    while (this.job !== null) await this.job
  }
}
