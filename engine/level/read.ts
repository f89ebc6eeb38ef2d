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

/**
 * Up to `want` entries; fewer only at the end, or once `maxBytes` of values are read (at
 * least one entry either way).
 */
export function readEntries(
  r: Reader,
  want: number,
  keys: boolean,
  values: boolean,
  maxBytes = Number.POSITIVE_INFINITY,
): Entry[] | Promise<Entry[]> {
  const out: Entry[] = []
  const budget = { bytes: maxBytes }
  return more(r, want, keys, values, out, budget) ? out : later(r, want, keys, values, out, budget)
}

async function later(
  r: Reader,
  want: number,
  keys: boolean,
  values: boolean,
  out: Entry[],
  budget: { bytes: number },
): Promise<Entry[]> {
  do await r.cursor.fetchLater(want - out.length)
  while (!more(r, want, keys, values, out, budget))
  return out
}

/** Appends entries to `out` while the cursor answers at once; false: a page must be awaited. */
function more(
  r: Reader,
  want: number,
  keys: boolean,
  values: boolean,
  out: Entry[],
  budget: { bytes: number },
): boolean {
  const page: string[] = []
  while (out.length < want && (out.length === 0 || budget.bytes > 0)) {
    page.length = 0
    const ask = want - out.length
    const whole = r.cursor.takeNow(ask, page)
    if (!values) {
      for (const k of page) out.push([fromEngineKey(k, r.keyFormat), undefined])
    } else {
      const got = r.db.scanValuesNow(r.ns, page)
      for (let i = 0; i < page.length; i++) {
        const v = got[i]
        if (v === undefined) continue
        const value = fromEngineValue(v, r.valueFormat)
        budget.bytes -= value.length
        out.push([keys ? fromEngineKey(page[i]!, r.keyFormat) : undefined, value])
      }
    }
    if (!whole) return false
    if (page.length < ask) break
  }
  return true
}

/** How many entries an iterator may still give under its limit. */
export function remaining(limit: number, count: number): number {
  return limit < 0 ? Number.POSITIVE_INFINITY : Math.max(0, limit - count)
}
