// An iterator's entries read a few at a time: next() is called once per entry, and reading
// one at a time from the engine cost most of an iteration. Runs grow from 1 to 256 entries
// and stop at `highWaterMarkBytes` of values (16 KiB by default, as classic-level's cache);
// 0 reads nothing ahead. Values read ahead are as they were when read (no snapshot either way).
import { levelError } from './errors.js'
import { type Entry, type Reader, readEntries } from './read.js'

const MAX_RUN = 256
const DEFAULT_HIGH_WATER = 16 * 1024

export class ReadAhead {
  private buffered: Entry[] = []
  private at = 0
  private run = 1
  private readonly highWater: number

  constructor(
    private readonly reader: Reader,
    private readonly keys: boolean,
    private readonly values: boolean,
    highWaterMarkBytes: unknown,
  ) {
    this.highWater =
      typeof highWaterMarkBytes === 'number' && highWaterMarkBytes >= 0
        ? highWaterMarkBytes
        : DEFAULT_HIGH_WATER
  }

  /** The next entry, undefined at the end. */
  next(): Entry | undefined | Promise<Entry | undefined> {
    if (this.at < this.buffered.length) return this.buffered[this.at++]
    const got = readEntries(this.reader, this.run, this.keys, this.values, this.highWater)
    if (this.highWater > 0) this.run = Math.min(this.run * 2, MAX_RUN)
    return got instanceof Promise ? got.then((e) => this.refill(e)) : this.refill(got)
  }

  /** Up to `want` entries: those read ahead first. */
  take(want: number): Entry[] | Promise<Entry[]> {
    const ready = this.buffered.slice(this.at, this.at + want)
    this.at += ready.length
    if (ready.length === want) return ready
    const got = readEntries(this.reader, want - ready.length, this.keys, this.values)
    return got instanceof Promise
      ? got.then((e) => ready.concat(e))
      : ready.length === 0
        ? got
        : ready.concat(got)
  }

  seek(target: string): void {
    this.buffered = []
    this.at = 0
    this.run = 1
    this.reader.cursor.seek(target)
  }

  private refill(entries: Entry[]): Entry | undefined {
    this.buffered = entries
    this.at = entries.length > 0 ? 1 : 0
    return entries[0]
  }
}

/**
 * The keys or the values (`field` 0 or 1) of a read-ahead's next entry and next entries, as
 * the key and value iterators answer them, with the engine's errors made Level errors.
 */
export async function nextField<T>(ahead: ReadAhead, field: 0 | 1): Promise<T | undefined> {
  try {
    const got = ahead.next()
    return (got instanceof Promise ? await got : got)?.[field] as T | undefined
  } catch (err) {
    throw levelError(err)
  }
}

export async function takeField<T>(ahead: ReadAhead, want: number, field: 0 | 1): Promise<T[]> {
  try {
    const got = ahead.take(want)
    return (got instanceof Promise ? await got : got).map((e: Entry) => e[field] as T)
  } catch (err) {
    throw levelError(err)
  }
}
