// The database's iterator of entries (abstract-level's AbstractIterator over a Cursor).
import { AbstractIterator } from 'abstract-level'
import { levelError } from './errors.js'
import { type LevelKey, toEngineKey } from './keys.js'
import { type Entry, type Reader, remaining } from './read.js'
import { ReadAhead } from './read-ahead.js'
import type { LevelValue } from './values.js'

export interface IteratorOptions {
  keys: boolean
  values: boolean
  limit: number
  highWaterMarkBytes?: unknown
}

export class CairnIterator<TDatabase> extends AbstractIterator<TDatabase, LevelKey, LevelValue> {
  private readonly ahead: ReadAhead

  constructor(
    db: TDatabase,
    private readonly options: IteratorOptions,
    reader: Reader,
  ) {
    super(db, options as never)
    this.ahead = new ReadAhead(reader, options.keys, options.values, options.highWaterMarkBytes)
  }

  async _next(): Promise<Entry | undefined> {
    try {
      const got = this.ahead.next()
      return got instanceof Promise ? await got : got
    } catch (err) {
      throw levelError(err)
    }
  }

  _nextv(size: number): Promise<Entry[]> {
    return this.take(size)
  }

  _all(): Promise<Entry[]> {
    return this.take(remaining(this.options.limit, this.count))
  }

  _seek(target: LevelKey): void {
    this.ahead.seek(toEngineKey(target))
  }

  private async take(want: number): Promise<Entry[]> {
    try {
      const got = this.ahead.take(want)
      return got instanceof Promise ? await got : got
    } catch (err) {
      throw levelError(err)
    }
  }
}
