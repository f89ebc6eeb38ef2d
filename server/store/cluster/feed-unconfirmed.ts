// The changes a poller delivered that no replica had confirmed (docs/redis.md, "Change
// feed"). Live delivery does not hold a stream back for a stalled replica, so a failover may
// lose what watchers were sent, and the next writes take those versions again. Comparing
// the namespace's version with the watcher's misses it when the new writes have already
// passed that version; comparing the stream's entries with what was delivered does not.
// So, until a replica confirms them, each such change is kept as its id and a digest of its
// fields; a read first checks they still stand, each one, with the same fields.
import { createHash } from 'node:crypto'

/** A stream entry as XREAD and XRANGE answer it: its id, and its fields and values. */
export type StreamEntry = [Buffer, Buffer[]]

/**
 * How many unconfirmed changes are kept per watched namespace, and how many of their bytes:
 * bounds on its memory (about 60 bytes each) and on the XRANGE that checks them, which reads
 * the entries whole. Past either, the oldest go: a failover that loses more than those kept
 * is still told by the newest, and the watch session's version check is left for the rest.
 */
export const KEPT = 10_000
export const KEPT_BYTES = 4 * 1024 * 1024

const digest = (fields: Buffer[]): string => {
  const h = createHash('sha1')
  for (const f of fields) {
    // Lengths first, so ["ab","c"] and ["a","bc"] differ.
    h.update(`${f.length}:`)
    h.update(f)
  }
  return h.digest('base64')
}

export class Unconfirmed {
  private ids: string[] = []
  private digests: string[] = []
  private sizes: number[] = []
  private bytes = 0

  get size(): number {
    return this.ids.length
  }

  /** The range an XRANGE reads to check them: the first and last kept ids. */
  get range(): [string, string] {
    return [this.ids[0]!, this.ids[this.ids.length - 1]!]
  }

  add(entries: StreamEntry[]): void {
    for (const [id, fields] of entries) {
      this.ids.push(id.toString())
      this.digests.push(digest(fields))
      let size = id.length
      for (const f of fields) size += f.length
      this.sizes.push(size)
      this.bytes += size
    }
    // The oldest go first, but never the newest: it alone still tells of a loss.
    let over = 0
    while (over < this.ids.length - 1 && (this.ids.length - over > KEPT || this.bytes > KEPT_BYTES))
      this.bytes -= this.sizes[over++]!
    if (over > 0) {
      this.ids.splice(0, over)
      this.digests.splice(0, over)
      this.sizes.splice(0, over)
    }
  }

  /**
   * Whether the stream's entries over `range` are exactly those kept: none missing, none
   * other. Anything else means the master serving the stream now lacks changes delivered.
   */
  standIn(entries: StreamEntry[]): boolean {
    if (entries.length !== this.ids.length) return false
    return entries.every(
      ([id, fields], i) => id.toString() === this.ids[i] && digest(fields) === this.digests[i],
    )
  }

  clear(): void {
    this.ids = []
    this.digests = []
    this.sizes = []
    this.bytes = 0
  }
}
