// The database's iterator of entries (abstract-level's AbstractIterator over a Cursor).
import { AbstractIterator } from 'abstract-level'
import { levelError } from './errors.js'
import { type LevelKey, toEngineKey } from './keys.js'
import { type Entry, type Reader, readEntries, remaining } from './read.js'
import type { LevelValue } from './values.js'

export interface IteratorOptions {
  keys: boolean
  values: boolean
  limit: number
}

export class CairnIterator<TDatabase> extends AbstractIterator<TDatabase, LevelKey, LevelValue> {
  constructor(
    db: TDatabase,
    private readonly options: IteratorOptions,
    private readonly reader: Reader,
  ) {
    super(db, options as never)
  }

  async _next(): Promise<Entry | undefined> {
    return (await this.read(1))[0]
  }

  _nextv(size: number): Promise<Entry[]> {
    return this.read(size)
  }

  _all(): Promise<Entry[]> {
    return this.read(remaining(this.options.limit, this.count))
  }

  _seek(target: LevelKey): void {
    this.reader.cursor.seek(toEngineKey(target))
  }

  private async read(want: number): Promise<Entry[]> {
    try {
      return await readEntries(this.reader, want, this.options.keys, this.options.values)
    } catch (err) {
      throw levelError(err)
    }
  }
}
