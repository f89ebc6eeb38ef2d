// The database's iterator of values alone: keys are read from the index, never decoded.
import { AbstractValueIterator } from 'abstract-level'
import { type LevelKey, toEngineKey } from './keys.js'
import { type Reader, remaining } from './read.js'
import { ReadAhead, nextField, takeField } from './read-ahead.js'
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

  _next(): Promise<LevelValue | undefined> {
    return nextField(this.ahead, 1)
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

  private take(want: number): Promise<LevelValue[]> {
    return takeField(this.ahead, want, 1)
  }
}
