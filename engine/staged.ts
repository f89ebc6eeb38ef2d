// Writes staged but not yet durable, as the next write's checks see them: a conditional
// write is checked against the newest staged entry for its key, else the index, so it
// stays exact with writes in flight, while reads never see what may yet fail.
import { EngineError } from './errors.js'
import type { KeyDir } from './keydir.js'
import type { Namespace, Staged } from './parts.js'
import { PUT, entryFlags, entryValueAt } from './record.js'
import type { Group, SegmentLog } from './segment-log.js'
import { decodeValue } from './values.js'

/**
 * The version a write must be checked against: the newest staged entry for the key, else
 * the index. -1 when the key is missing (deleted, or expired).
 */
export function latestVersion(
  keydir: KeyDir,
  n: Namespace,
  key: string,
  now: () => number,
): number {
  const st = n.staged.size > 0 ? n.staged.get(key) : undefined
  if (st) {
    if (st.type !== PUT || (st.expiresAt !== 0 && st.expiresAt <= now())) return -1
    return st.version
  }
  const slot = keydir.liveSlot(n, key)
  return slot < 0 ? -1 : keydir.slots.version[slot]!
}

/** The value of a staged put, decoded from its group's buffer. */
export function stagedValue(st: Staged): unknown {
  const b = st.group.buf
  return decodeValue(entryFlags(b, st.at), b, entryValueAt(b, st.at), st.at + st.len)
}

/** The key's expiry as the next write finds it (0: none). */
export function latestExpiry(keydir: KeyDir, n: Namespace, key: string): number {
  const st = n.staged.get(key)
  return st ? st.expiresAt : keydir.slots.expires[keydir.liveSlot(n, key)]!
}

/**
 * A staged entry whose group failed. Its version is given back: a failure fails every group
 * not yet acknowledged (segment-log.ts, fail), so no write staged after it survives either,
 * and the namespace's next write takes the first version that failed. A failed write then
 * leaves no gap in the versions, which a watch resumed after a restart would meet as
 * history it cannot replay.
 */
export function unstage(keydir: KeyDir, st: Staged): void {
  const n = keydir.byId.get(st.nsId)
  if (n === undefined) return
  if (n.staged.get(st.key) === st) n.staged.delete(st.key)
  if (st.version <= n.version) n.version = st.version - 1
}

/**
 * An answer decided against writes still staged (a CONFLICT, a delete that found nothing),
 * given once those are durable. Should one of them fail, this answer fails with the same
 * error instead: what it was decided against never happened, and a failed write is seen by
 * nothing, conditional writes included. `outcome` is a value to resolve with or an error to
 * reject with.
 */
export function afterStaged<T>(
  log: SegmentLog,
  keys: [Namespace, string][],
  outcome: T | EngineError,
): Promise<T> {
  const groups = new Set<Group>()
  for (const [n, key] of keys) {
    const st = n.staged.size > 0 ? n.staged.get(key) : undefined
    if (st) groups.add(st.group as Group)
  }
  const give = (): T => {
    if (outcome instanceof EngineError) throw outcome
    return outcome
  }
  if (groups.size === 0) {
    try {
      return Promise.resolve(give())
    } catch (err) {
      return Promise.reject(err)
    }
  }
  return Promise.all([...groups].map((g) => log.settled(g))).then(give)
}
