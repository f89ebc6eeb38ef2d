// The database's iterator of keys alone: no value is read.
import { AbstractKeyIterator } from 'abstract-level'
import { levelError } from './errors.js'
import { type LevelKey, toEngineKey } from './keys.js'
import { type Reader, readEntries, remaining } from './read.js'

export class CairnKeyIterator<TDatabase> extends AbstractKeyIterator<TDatabase, LevelKey> {
  constructor(
    db: TDatabase,
    private readonly options: { limit: number },
    private readonly reader: Reader,
  ) {
    super(db, options as never)
  }

  async _next(): Promise<LevelKey | undefined> {
    return (await this.read(1))[0]
  }

  _nextv(size: number): Promise<LevelKey[]> {
    return this.read(size)
  }

  _all(): Promise<LevelKey[]> {
    return this.read(remaining(this.options.limit, this.count))
  }

  _seek(target: LevelKey): void {
    this.reader.cursor.seek(toEngineKey(target))
  }

  private async read(want: number): Promise<LevelKey[]> {
    try {
      return (await readEntries(this.reader, want, true, false)).map((e) => e[0]!)
    } catch (err) {
      throw levelError(err)
    }
  }
}
