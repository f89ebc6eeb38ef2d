// The in-memory shapes the database is built from, and the names of its files.
import type { HintBuilder } from './hint.js'
import type { KeyMap } from './keymap.js'
import type { SortedKeys } from './sorted-keys.js'

export interface Namespace {
  id: number
  name: string
  /** key -> slot in Slots */
  map: KeyMap
  keys: SortedKeys
  /** Bytes of live keys and values. */
  bytes: number
  /** How many live keys carry an expiry; scans skip the expiry check when none do. */
  ttl: number
  /** While the sorted list is built after open: resolves when listings may go ahead. */
  building: Promise<void> | null
  /** Keys written or removed during that build (see sorted-build.ts). */
  changes: Map<string, true> | null
  /** Keys that came or went while a checkpoint walk may fold the namespace (fold.ts). */
  moved: Set<string> | null
  /** Writes staged but not yet durable, newest per key: what conditional checks see. */
  staged: Map<string, Staged>
  /**
   * The namespace's version: the last one given to a write, staged ones included. Versions
   * count per namespace (FORMAT.md, "Versions"), so none reveals another namespace's writes.
   */
  version: number
  /** The last version made durable and visible: what a listing or a watch reports. */
  applied: number
}

/** One entry of a write, checked and encoded, before it is staged (db.ts, commit). */
export interface Entry {
  n: Namespace
  key: string
  /** The key's length in UTF-8 bytes. */
  keyLen: number
  type: number
  flags: number
  bytes: Uint8Array | null
  expiresAt: number
}

/** Where an entry is: its segment, its offset in it, and its length. */
export interface EntryAt {
  seg: number
  off: number
  len: number
}

/** An entry staged in a group; the key directory applies it once the group is durable. */
export interface Staged {
  nsId: number
  key: string
  type: number
  version: number
  expiresAt: number
  /** Where the entry starts in its group's buffer. */
  at: number
  len: number
  /** The group it is in (its buffer may be replaced while the group grows). */
  group: { buf: Buffer }
}

export interface Segment {
  id: number
  file: string
  fd: number
  /** Bytes in the file. */
  written: number
  /** Bytes whose entries the index has been given: the hint covers exactly these. */
  durable: number
  /** Bytes in the file plus those accepted but not yet written. */
  end: number
  /** Bytes of entries the index points at. */
  live: number
  /** Collects the hint entries until the segment is sealed and its hint file written. */
  hint: HintBuilder | null
  sealed: boolean
  unsynced: boolean
  /** The database's write count when the segment was started (kept in its header and hint). */
  baseVersion: number
  /**
   * The lowest version of any entry in it, per namespace id: a tombstone of that namespace
   * newer than this may shadow something here, so compaction keeps it while this segment
   * stays. null when not known (a segment an open took from a checkpoint): it may shadow
   * anything.
   */
  minVersions: Map<number, number> | null
}

/**
 * Bytes of the log's segments (accepted writes included), and how many of them no live key
 * points at: what stats() reports, and what decides whether compaction is due.
 */
export function diskUse(segments: Map<number, Segment>): { diskBytes: number; deadBytes: number } {
  let diskBytes = 0
  let live = 0
  for (const seg of segments.values()) {
    diskBytes += seg.end
    live += seg.live
  }
  return { diskBytes, deadBytes: Math.max(0, diskBytes - live) }
}

/** Notes `version` of namespace `nsId` as written in `seg`. */
export function noteVersion(seg: Segment, nsId: number, version: number): void {
  if (seg.minVersions !== null) noteMin(seg.minVersions, nsId, version)
}

/** Lowers `mins`' entry for `nsId` to `version` when it is lower (a segment's minVersions). */
export function noteMin(mins: Map<number, number>, nsId: number, version: number): void {
  const cur = mins.get(nsId)
  if (cur === undefined || version < cur) mins.set(nsId, version)
}

/** Whether `seg` may hold an entry of namespace `nsId` older than `version`. */
export function mayHoldOlder(seg: Segment, nsId: number, version: number): boolean {
  if (seg.minVersions === null) return true
  const min = seg.minVersions.get(nsId)
  return min !== undefined && min < version
}

const pad = (id: number) => String(id).padStart(8, '0')
export const segmentFile = (id: number) => `seg-${pad(id)}.seg`
export const hintFile = (id: number) => `seg-${pad(id)}.hint`
export const compactTmpFile = (id: number) => `compact-${pad(id)}.tmp`
/** A namespace's recent changes that compaction took out of the log (history-file.ts). */
export const historyFile = (nsId: number) => `history-${pad(nsId)}.hst`
export const HISTORY_NAME = /^history-(\d{8,})\.hst$/
export const SEGMENT_NAME = /^seg-(\d{8})\.seg$/
export const COMPACTED_FILE = 'COMPACTED'
