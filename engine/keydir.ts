// The key directory: every live key of every namespace and where its newest record is. A key
// maps to a slot; the slot's typed-array columns (slots.ts) hold the segment, offset, length,
// version and expiry, so a million keys cost a Map entry and a few numbers each, not an
// object. The sorted key lists (sorted-keys.ts) give ordered listing. Writes, recovery and
// compaction all change it through here; reads look things up here.
import { type BaseKeys, GONE, mergeKeys } from './base-keys.js'
import { KeyMap } from './keymap.js'
import { ENTRY_HEADER } from './record.js'
import type { Namespace, Segment } from './parts.js'
import { Slots } from './slots.js'
import { SortedKeys } from './sorted-keys.js'
import type { ListResult } from './types.js'
import { compareKeys } from './utf8.js'
import type { ValueCache } from './value-cache.js'

/** Where a namespace's expiry sweep goes on (KeyDir.expired). */
export interface SweepCursor {
  base: BaseKeys | null
  /** Base positions before this were looked at. */
  at: number
  /** The last key of the sorted list looked at. */
  after: string | undefined
}

export class KeyDir {
  readonly slots = new Slots()
  readonly byName = new Map<string, Namespace>()
  readonly byId = new Map<number, Namespace>()

  constructor(
    /** The log's segments, whose live byte counts follow the index. */
    private readonly segments: Map<number, Segment>,
    /** Cached values by slot: an entry goes when its slot is pointed elsewhere or freed. */
    private readonly cache: ValueCache | null,
    /** The engine's clock (OpenOptions.clock), for what has expired. */
    private readonly now: () => number = Date.now,
  ) {}

  addNamespace(id: number, name: string): Namespace {
    const n: Namespace = {
      id,
      name,
      map: new KeyMap(),
      keys: new SortedKeys(),
      bytes: 0,
      ttl: 0,
      building: null,
      changes: null,
      moved: null,
      staged: new Map(),
      version: 0,
      applied: 0,
    }
    this.byName.set(name, n)
    this.byId.set(id, n)
    return n
  }

  /** Forgets a dropped namespace and frees its slots. */
  dropNamespace(n: Namespace): void {
    this.byName.delete(n.name)
    this.byId.delete(n.id)
    for (const slot of n.map.values()) {
      this.unlive(slot)
      this.cache?.delete(slot)
      this.slots.release(slot)
    }
    n.map.clear()
  }

  /** The key's slot when it holds an unexpired value, else -1 (dropping an expired one). */
  liveSlot(n: Namespace, key: string): number {
    const slot = n.map.get(key)
    if (slot === undefined) return -1
    const exp = this.slots.expires[slot]
    if (exp !== 0 && exp <= this.now()) {
      this.remove(n, key)
      this.onExpired(n, key)
      return -1
    }
    return slot
  }

  /** Told of every key that leaves the index because its time ran out (db.ts writes it down). */
  onExpired: (n: Namespace, key: string) => void = () => {}

  /**
   * Told of every live slot the index lets go of (overwritten, deleted, expired), while it still
   * points at its record: a namespace's history window keeps that version (windows.ts).
   * Not during recovery, which tells the windows itself.
   */
  superseding: ((n: Namespace, key: string, slot: number) => void) | null = null

  /** Points the key at a record; used by writes, recovery and compaction alike. */
  setLive(
    n: Namespace,
    key: string,
    seg: Segment,
    off: number,
    len: number,
    version: number,
    expiresAt: number,
    /** While opening, the sorted key list is built once at the end instead. */
    recovering = false,
    /** The key's current slot when the caller has just looked it up. */
    current: number | undefined = n.map.get(key),
  ): number {
    const s = this.slots
    let slot = current
    if (slot === undefined) {
      slot = s.alloc()
      n.map.set(key, slot)
      if (!recovering) this.keyAdded(n, key)
    } else {
      if (!recovering && this.superseding !== null) this.superseding(n, key, slot)
      this.cache?.delete(slot)
      this.unlive(slot)
      n.bytes -= s.len[slot]! - ENTRY_HEADER
      if (s.expires[slot] !== 0) n.ttl--
    }
    s.seg[slot] = seg.id
    s.off[slot] = off
    s.len[slot] = len
    s.version[slot] = version
    s.expires[slot] = expiresAt
    seg.live += len
    n.bytes += len - ENTRY_HEADER
    if (expiresAt !== 0) n.ttl++
    return slot
  }

  /** Keeps the sorted list in step, or notes the key while it is being built after open. */
  private keyAdded(n: Namespace, key: string): void {
    n.moved?.add(key)
    if (n.changes) n.changes.set(key, true)
    else n.keys.insert(key)
  }

  private keyRemoved(n: Namespace, key: string): void {
    n.moved?.add(key)
    if (n.changes) n.changes.set(key, true)
    else n.keys.remove(key)
  }

  remove(n: Namespace, key: string, recovering = false): void {
    const slot = n.map.get(key)
    if (slot === undefined) return
    if (!recovering && this.superseding !== null) this.superseding(n, key, slot)
    this.unlive(slot)
    n.bytes -= this.slots.len[slot]! - ENTRY_HEADER
    if (this.slots.expires[slot] !== 0) n.ttl--
    n.map.delete(key)
    if (!recovering) this.keyRemoved(n, key)
    this.cache?.delete(slot)
    this.slots.release(slot)
  }

  unlive(slot: number): void {
    const seg = this.segments.get(this.slots.seg[slot])
    if (seg) seg.live -= this.slots.len[slot]
  }

  /**
   * Moves a slot to a copy of its record (compaction), only if it still points where the
   * copy was made from: a write made meanwhile went elsewhere and wins.
   */
  relocate(slot: number, fromSeg: number, fromOff: number, to: Segment, toOff: number): boolean {
    const s = this.slots
    if (s.seg[slot] !== fromSeg || s.off[slot] !== fromOff) return false
    this.unlive(slot)
    s.seg[slot] = to.id
    s.off[slot] = toOff
    to.live += s.len[slot]!
    return true
  }

  /** Keys and bytes of every namespace. */
  totals(): { keys: number; liveBytes: number } {
    let keys = 0
    let liveBytes = 0
    for (const n of this.byName.values()) {
      keys += n.map.size
      liveBytes += n.bytes
    }
    return { keys, liveBytes }
  }

  /**
   * Keys of the namespace whose expiry is at or before `now`, looking at no more than
   * `budget` keys from `from` on: the base by position and by slot (no string is made but
   * for a key that expired), then the sorted list from the last key looked at. `next` says
   * where to go on, undefined once the walk is done; a base replaced since (a fold) is walked
   * again from its start.
   */
  expired(
    n: Namespace,
    from: SweepCursor | undefined,
    budget: number,
    now: number,
  ): { gone: string[]; looked: number; next?: SweepCursor } {
    const gone: string[] = []
    const exp = this.slots.expires
    const base = n.map.base
    const same = from !== undefined && from.base === base
    let at = same ? from.at : 0
    let looked = 0
    if (base !== null) {
      for (; at < base.count && looked < budget; at++, looked++) {
        const slot = base.slots[at]!
        if (slot === GONE) continue
        const e = exp[slot]!
        if (e !== 0 && e <= now) gone.push(base.keyAt(at))
      }
      if (at < base.count) return { gone, looked, next: { base, at, after: undefined } }
    }
    const want = budget - looked
    const after = same ? from.after : undefined
    const keys = n.keys.following(after, want)
    for (const key of keys) {
      const e = exp[n.map.get(key)!]!
      if (e !== 0 && e <= now) gone.push(key)
    }
    looked += keys.length
    if (keys.length < want) return { gone, looked }
    return { gone, looked, next: { base, at, after: keys.at(-1) ?? after } }
  }

  /**
   * A page of up to `limit` keys with `prefix`, in UTF-8 byte order (step 1) or descending
   * (-1), past `after`, with where the next page begins when there are more. The keys come
   * from both the keys written since the open and the base: the first `limit` + 1 of each
   * side, merged, hold the first `limit` + 1 of all. A key whose expiry has passed is passed
   * over. With `json`, a page the base alone holds comes as the UTF-8 text of a JSON array in
   * `json` (and `keys` empty), copied from the base's bytes with no string made for a key;
   * a key JSON must escape gives the page as strings instead.
   */
  scan(
    n: Namespace,
    prefix: string,
    after: string | undefined,
    limit: number,
    step: 1 | -1,
    json: boolean,
  ): ListResult {
    const now = n.ttl > 0 ? this.now() : 0
    // Where the keys written since the open were taken, for their JSON (forward, no expiry).
    const spans = json && step > 0 && now === 0 ? [] : null
    const [keys, at] = this.sides(n, prefix, after, limit + 1, step, now, spans)
    const base = n.map.base
    if (at.length === 0) {
      const text = spans === null ? undefined : n.keys.json(spans, Math.min(keys.length, limit))
      if (text === undefined) return page(keys, limit)
      const res: ListResult = { keys: [], json: text }
      if (keys.length > limit) res.next = keys[limit - 1]
      return res
    }
    if (keys.length > 0 || !json) return page(mergeKeys(keys, base!.keysAt(at), step), limit)
    const more = at.length > limit
    if (more) at.length = limit
    const text = base!.json(at)
    const res: ListResult = text === undefined ? { keys: base!.keysAt(at) } : { keys, json: text }
    if (more) res.next = base!.keyAt(at[limit - 1]!)
    return res
  }

  /**
   * A listing's two sides: the first `want` keys written since the open (strings), and the
   * positions of the base's first `want` keys.
   */
  private sides(
    n: Namespace,
    prefix: string,
    after: string | undefined,
    want: number,
    step: 1 | -1,
    now: number,
    spans: number[] | null,
  ): [string[], number[]] {
    const sorted = n.keys
    const base = n.map.base
    const at: number[] = []
    let ci: number
    let i: number
    if (step > 0) {
      const past = after !== undefined && compareKeys(after, prefix) >= 0
      ;[ci, i] = past ? sorted.seek(after, true) : sorted.seek(prefix, false)
      if (base !== null) {
        const [lo, hi] = base.prefixRange(prefix)
        const p = past ? Math.max(lo, base.seek(after, true)) : lo
        base.collect(p, 1, lo, hi, want, at, this.slots.expires, now)
      }
    } else {
      const chunks = sorted.chunks
      ;[ci, i] = prefix
        ? sorted.seekPastPrefix(prefix)
        : [chunks.length - 1, chunks[chunks.length - 1]!.length]
      if (after !== undefined) {
        const [ai, aj] = sorted.seek(after, false)
        if (ai < ci || (ai === ci && aj < i)) [ci, i] = [ai, aj]
      }
      i--
      if (base !== null) {
        const [lo, hi] = base.prefixRange(prefix)
        const p = after !== undefined ? Math.min(hi, base.seek(after, false)) : hi
        base.collect(p - 1, -1, lo, hi, want, at, this.slots.expires, now)
      }
    }
    const keys: string[] = []
    this.walk(n, prefix, ci, i, step, want, now, keys, spans)
    return [keys, at]
  }

  /**
   * Appends to `keys` the keys of the sorted list from chunk `ci`, position `i`, stepping
   * `step` (1 or -1), until one lacks the prefix or `want` are taken; keys expired at `now`
   * are passed over. With `spans` (forward, `now` 0), notes each chunk's run of keys taken
   * there as chunk, first position, end position.
   */
  private walk(
    n: Namespace,
    prefix: string,
    ci: number,
    i: number,
    step: 1 | -1,
    want: number,
    now: number,
    keys: string[],
    spans: number[] | null,
  ): void {
    const chunks = n.keys.chunks
    const s = this.slots
    for (
      ;
      ci >= 0 && ci < chunks.length;
      ci += step, i = step > 0 ? 0 : (chunks[ci]?.length ?? 0) - 1
    ) {
      const chunk = chunks[ci]!
      if (now === 0) {
        const before = keys.length
        const taken = takeSpan(chunk, prefix, i, step, want - keys.length, keys)
        if (spans !== null && keys.length > before) spans.push(ci, i, i + keys.length - before)
        if (keys.length >= want || taken < 0) return
        continue
      }
      for (; i >= 0 && i < chunk.length; i += step) {
        const k = chunk[i]!
        if (prefix && !k.startsWith(prefix)) return
        const e = s.expires[n.map.get(k)!]
        if (e !== 0 && e <= now) continue
        if (keys.length === want) return
        keys.push(k)
      }
    }
  }
}

/** A page of `limit` keys, with where the next begins when there were more. */
function page(keys: string[], limit: number): ListResult {
  if (keys.length <= limit) return { keys }
  keys.length = limit
  return { keys, next: keys[limit - 1] }
}

/**
 * Appends to `out` up to `want` keys of `chunk` from position `i` stepping `step`, stopping at
 * the first without `prefix`. Keys sharing a prefix are contiguous in any lexicographic order,
 * so where they end is found by bisection rather than by testing each key. Returns -1 when the
 * prefix's keys ended inside the span, else how many were taken.
 */
function takeSpan(
  chunk: string[],
  prefix: string,
  i: number,
  step: 1 | -1,
  want: number,
  out: string[],
): number {
  // The span [from, to) of the chunk this step would cover.
  const from = step > 0 ? i : Math.max(0, i + 1 - want)
  const to = step > 0 ? Math.min(chunk.length, i + want) : i + 1
  if (from >= to) return 0
  let lo = from
  let hi = to
  if (step > 0) {
    // Forward from the first key at or past the prefix: its keys open the span.
    if (prefix !== '' && !chunk[to - 1]!.startsWith(prefix)) {
      while (lo < hi) {
        const mid = (lo + hi) >> 1
        if (chunk[mid]!.startsWith(prefix)) lo = mid + 1
        else hi = mid
      }
      for (let j = from; j < lo; j++) out.push(chunk[j]!)
      return -1
    }
    for (let j = from; j < to; j++) out.push(chunk[j]!)
    return to - from
  }
  // Backward from the last key at or before the prefix's end: its keys close the span.
  if (prefix !== '' && !chunk[from]!.startsWith(prefix)) {
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (chunk[mid]!.startsWith(prefix)) hi = mid
      else lo = mid + 1
    }
    for (let j = to - 1; j >= lo; j--) out.push(chunk[j]!)
    return -1
  }
  for (let j = to - 1; j >= from; j--) out.push(chunk[j]!)
  return to - from
}
