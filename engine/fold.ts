// Folding a namespace's new keys into its base. Keys written since the open live as strings
// in a Map and a sorted list (some 120 bytes a key more than a base holds them in), so a
// server that runs long after its open would drift back to the fat index. A checkpoint walk
// already lists every key of the namespace, in order, with its slot: once the checkpoint is
// written, that list becomes the namespace's new base, and its Map and sorted list start
// empty again.
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
import type { Namespace } from './parts.js'
import { SortedKeys } from './sorted-keys.js'
import { SLICE_MS, yieldToRequests } from './yield.js'

/** A namespace folds once its Map holds this many keys, and at least an eighth of its keys. */
export const FOLD_MIN = 8192

export function wantsFold(n: Namespace): boolean {
  const fresh = n.map.fresh
  return n.building === null && n.changes === null && fresh >= FOLD_MIN && fresh * 8 >= n.map.size
}

/** One namespace's keys as a checkpoint walk took them, in order, each with its slot. */
export interface WalkedKeys {
  blob: Buffer
  ends: Uint32Array
  slots: Uint32Array
}

/** Makes `walked` the namespace's base (see above); gives up when the database closes. */
export async function fold(db: DbCore, n: Namespace, walked: WalkedKeys): Promise<void> {
  const gone = () => db.isClosed() || db.keydir.byId.get(n.id) !== n
  try {
    const moved = n.moved
    if (moved === null) return
    const base = new BaseKeys(walked.blob, 0, walked.ends, walked.slots)
    await base.hash(gone)
    const map = new Map<string, number>()
    const keys = new SortedKeys()
    for (;;) {
      if (gone()) return
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
  } finally {
    n.moved = null
  }
}
