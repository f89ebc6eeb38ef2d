// The database's iterator of values alone: keys are read from the index, never decoded.
import { AbstractValueIterator } from 'abstract-level'
import { levelError } from './errors.js'
import { type LevelKey, toEngineKey } from './keys.js'
import { type Reader, readEntries, remaining } from './read.js'
import type { LevelValue } from './values.js'

export class CairnValueIterator<TDatabase> extends AbstractValueIterator<
  TDatabase,
  LevelKey,
  LevelValue
> {
  constructor(
    db: TDatabase,
    private readonly options: { limit: number },
    private readonly reader: Reader,
  ) {
    super(db, options as never)
  }

  async _next(): Promise<LevelValue | undefined> {
    return (await this.read(1))[0]
  }

  _nextv(size: number): Promise<LevelValue[]> {
    return this.read(size)
  }

  _all(): Promise<LevelValue[]> {
    return this.read(remaining(this.options.limit, this.count))
  }

  _seek(target: LevelKey): void {
    this.reader.cursor.seek(toEngineKey(target))
  }

  private async read(want: number): Promise<LevelValue[]> {
    try {
      return (await readEntries(this.reader, want, false, true)).map((e) => e[1]!)
    } catch (err) {
      throw levelError(err)
    }
  }
}
