// What every kind of iterator reads: keys from the cursor, values from the index as they are
// now. A key deleted between its page and its value is passed over, as a database without
// snapshots may.
import type { Db } from '../db.js'
import type { Cursor } from './cursor.js'
import { type Format, fromEngineKey, type LevelKey } from './keys.js'
import { fromEngineValue, type LevelValue } from './values.js'

export interface Reader {
  db: Db
  ns: string
  cursor: Cursor
  keyFormat: Format
  valueFormat: Format
}

export type Entry = [LevelKey | undefined, LevelValue | undefined]

/** Up to `want` entries; fewer only at the end. */
export async function readEntries(
  r: Reader,
  want: number,
  keys: boolean,
  values: boolean,
): Promise<Entry[]> {
  const out: Entry[] = []
  while (out.length < want) {
    const ask = want - out.length
    const page = await r.cursor.take(ask)
    for (const k of page) {
      if (!values) {
        out.push([fromEngineKey(k, r.keyFormat), undefined])
        continue
      }
      const got = r.db.getNow(r.ns, k)
      if (got === undefined) continue
      out.push([
        keys ? fromEngineKey(k, r.keyFormat) : undefined,
        fromEngineValue(got.value, r.valueFormat),
      ])
    }
    if (page.length < ask) break
  }
  return out
}

/** How many entries an iterator may still give under its limit. */
export function remaining(limit: number, count: number): number {
  return limit < 0 ? Number.POSITIVE_INFINITY : Math.max(0, limit - count)
}
