// Folding a namespace's new keys into its base. Keys written since the open live as strings
// in a Map and a sorted list (some 120 bytes a key more than a base holds them in), so a
// server that runs long after its open would drift back to the fat index, and one opened by
// a log replay would start there. A walk of the namespace (key-walk.ts) lists every key, in
// order, with its slot, and that list becomes the namespace's new base, its Map and sorted
// list starting empty again. A checkpoint's walk is used when a checkpoint runs anyway;
// otherwise the namespace is walked alone (foldAlone), so folding never waits for, nor
// depends on, checkpoints.
//
// The walk ran in slices while writes went on, so its list may be out of date for the keys
// that came or went meanwhile (a key that stayed keeps its slot: slots change only when a key
// goes and comes back). Those keys are noted from the walk's start (`Namespace.moved`) and
// settled against the index as it is now: a key of the new base takes its current slot or is
// marked gone; any other key that is live goes to the new Map. Settling runs in slices too,
// noting more keys as writes go on, and the swap happens in one synchronous step when none is
// left, so every read sees either the old parts or the new ones.
import { BaseKeys } from './base-keys.js'
import type { DbCore } from './db-core.js'
import { Columns, type WalkedKeys, walkKeys } from './key-walk.js'
import type { Namespace } from './parts.js'
import { SortedKeys } from './sorted-keys.js'
import { SLICE_MS, yieldToRequests } from './yield.js'

/** A namespace folds once its Map holds this many keys, and at least an eighth of its keys. */
export const FOLD_MIN = 8192

export function wantsFold(n: Namespace): boolean {
  const fresh = n.map.fresh
  return (
    n.building === null &&
    n.changes === null &&
    n.moved === null &&
    fresh >= FOLD_MIN &&
    fresh * 8 >= n.map.size
  )
}

/**
 * Whether keys written during a fold outnumber half of those it folds. Each of them is settled
 * one by one (and a new one into a sorted list), while the old index and the new are both
 * held: under a bulk load of new keys the settling never catches up, and the fold gives up
 * rather than hold both for as long as the load lasts (upkeep.ts tries again later).
 */
const overrun = (n: Namespace, folding: number): boolean =>
  n.moved !== null && n.moved.size > Math.max(FOLD_MIN, folding / 2)

/**
 * Folds `n` if it wants a fold, with a walk of its own. Resolves true once folded; false when
 * it gave up (the database closed, or `overrun`).
 */
export async function foldAlone(db: DbCore, n: Namespace): Promise<boolean> {
  if (!wantsFold(n)) return false
  const gone = () => db.isClosed() || db.keydir.byId.get(n.id) !== n
  n.moved = new Set()
  try {
    const cols = new Columns(n.map.size, false)
    let start = performance.now()
    const paced = async (): Promise<boolean> => {
      if (performance.now() - start < SLICE_MS) return true
      await yieldToRequests(performance.now() - start)
      start = performance.now()
      return !gone() && !overrun(n, cols.n)
    }
    if (!(await walkKeys(n, undefined, cols, db.keydir.slots, paced))) return false
    return await fold(db, n, cols.walked(0, cols.n))
  } finally {
    n.moved = null
  }
}

/**
 * Makes `walked` the namespace's base (see above). Resolves true once it is; false when it
 * gave up (the database closed, or `overrun`).
 */
export async function fold(db: DbCore, n: Namespace, walked: WalkedKeys): Promise<boolean> {
  const gone = () =>
    db.isClosed() || db.keydir.byId.get(n.id) !== n || overrun(n, walked.slots.length)
  try {
    const moved = n.moved
    if (moved === null) return false
    const base = new BaseKeys(walked.blob, 0, walked.ends, walked.slots)
    await base.hash(gone)
    const map = new Map<string, number>()
    const keys = new SortedKeys()
    for (;;) {
      if (gone()) return false
      const began = performance.now()
      let k = 0
      for (const key of moved) {
        moved.delete(key)
        const slot = n.map.get(key)
        if (!base.place(key, slot)) {
          if (slot === undefined) {
            map.delete(key)
            keys.remove(key)
          } else {
            map.set(key, slot)
            keys.insert(key)
          }
        }
        if ((++k & 255) === 0 && performance.now() - began >= SLICE_MS) break
      }
      if (moved.size === 0) break
      await yieldToRequests(performance.now() - began)
    }
    n.map.replace(base, map)
    n.keys = keys
    return true
  } finally {
    n.moved = null
  }
}
