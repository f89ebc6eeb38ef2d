// The database's iterator of values alone: keys are read from the index, never decoded.
import { AbstractValueIterator } from 'abstract-level'
import { levelError } from './errors.js'
import { type LevelKey, toEngineKey } from './keys.js'
import { type Entry, type Reader, remaining } from './read.js'
import { ReadAhead } from './read-ahead.js'
import type { LevelValue } from './values.js'

export class CairnValueIterator<TDatabase> extends AbstractValueIterator<
  TDatabase,
  LevelKey,
  LevelValue
> {
  private readonly ahead: ReadAhead

  constructor(
    db: TDatabase,
    private readonly options: { limit: number; highWaterMarkBytes?: unknown },
    reader: Reader,
  ) {
    super(db, options as never)
    this.ahead = new ReadAhead(reader, false, true, options.highWaterMarkBytes)
  }

  async _next(): Promise<LevelValue | undefined> {
    try {
      const got = this.ahead.next()
      return (got instanceof Promise ? await got : got)?.[1]
    } catch (err) {
      throw levelError(err)
    }
  }

  _nextv(size: number): Promise<LevelValue[]> {
    return this.take(size)
  }

  _all(): Promise<LevelValue[]> {
    return this.take(remaining(this.options.limit, this.count))
  }

  _seek(target: LevelKey): void {
    this.ahead.seek(toEngineKey(target))
  }

  private async take(want: number): Promise<LevelValue[]> {
    try {
      const got = this.ahead.take(want)
      return (got instanceof Promise ? await got : got).map((e: Entry) => e[1]!)
    } catch (err) {
      throw levelError(err)
    }
  }
}
