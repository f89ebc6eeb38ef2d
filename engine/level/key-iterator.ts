// The database's iterator of keys alone: no value is read.
import { AbstractKeyIterator } from 'abstract-level'
import { levelError } from './errors.js'
import { type LevelKey, toEngineKey } from './keys.js'
import { type Entry, type Reader, remaining } from './read.js'
import { ReadAhead } from './read-ahead.js'

export class CairnKeyIterator<TDatabase> extends AbstractKeyIterator<TDatabase, LevelKey> {
  private readonly ahead: ReadAhead

  constructor(
    db: TDatabase,
    private readonly options: { limit: number; highWaterMarkBytes?: unknown },
    reader: Reader,
  ) {
    super(db, options as never)
    this.ahead = new ReadAhead(reader, true, false, options.highWaterMarkBytes)
  }

  async _next(): Promise<LevelKey | undefined> {
    try {
      const got = this.ahead.next()
      return (got instanceof Promise ? await got : got)?.[0]
    } catch (err) {
      throw levelError(err)
    }
  }

  _nextv(size: number): Promise<LevelKey[]> {
    return this.take(size)
  }

  _all(): Promise<LevelKey[]> {
    return this.take(remaining(this.options.limit, this.count))
  }

  _seek(target: LevelKey): void {
    this.ahead.seek(toEngineKey(target))
  }

  private async take(want: number): Promise<LevelKey[]> {
    try {
      const got = this.ahead.take(want)
      return (got instanceof Promise ? await got : got).map((e: Entry) => e[0]!)
    } catch (err) {
      throw levelError(err)
    }
  }
}
