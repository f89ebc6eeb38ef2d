// The database's iterator of keys alone: no value is read.
import { AbstractKeyIterator } from 'abstract-level'
import { type LevelKey, toEngineKey } from './keys.js'
import { type Reader, remaining } from './read.js'
import { ReadAhead, nextField, takeField } from './read-ahead.js'

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

  _next(): Promise<LevelKey | undefined> {
    return nextField(this.ahead, 0)
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

  private take(want: number): Promise<LevelKey[]> {
    return takeField(this.ahead, want, 0)
  }
}
