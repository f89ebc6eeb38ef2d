// What the database's passes work on: recovery, compaction, the index checkpoint, folding
// keys into a base, and the recent-changes read. Db implements it; the passes take this
// interface instead of the class, so that db.ts can call them without a cycle of imports.
import type { EngineError } from './errors.js'
import type { KeyDir } from './keydir.js'
import type { NamespaceTable } from './namespaces-file.js'
import type { EntryAt, Segment } from './parts.js'
import type { SegmentLog } from './segment-log.js'
import type { Durability, EngineStats } from './types.js'

/** One durable change, as onCommit hands it out. */
export interface CommittedChange {
  ns: string
  type: 'put' | 'delete'
  key: string
  version: number
  /** put: the value (raw bytes as a Buffer). */
  value?: unknown
  /** Milliseconds since the Unix epoch, when the put has a TTL. */
  expiresAt?: number
}

export interface DbCore {
  readonly dir: string
  readonly durability: Durability
  readonly segmentBytes: number
  /** The engine's clock (OpenOptions.clock). */
  readonly now: () => number
  /** Every live key and where its record is (keydir.ts). */
  readonly keydir: KeyDir
  table: NamespaceTable
  readonly log: SegmentLog
  /** Records committed, database-wide (names segments; never shown to anyone). */
  version: number
  /** `version` as of the last group made durable (a checkpoint records it). */
  appliedVersion: number
  /** Counts compaction passes started: a checkpoint walk that sees it change gives up. */
  compactionEpoch: number
  /** How the last open rebuilt the index: from a checkpoint and the log after it, or the log. */
  openedFrom: 'checkpoint' | 'log'
  /** A checkpoint on disk holds the whole index as of the last one written or loaded. */
  checkpointCurrent: boolean
  /** Set when compaction met a damaged record: it stops until the directory is repaired. */
  damaged: EngineError | null
  readonly segments: Map<number, Segment>
  readonly active: Segment
  rotate(): Segment
  /** Waits until every write staged so far is durable. */
  drain(): Promise<void>
  isClosed(): boolean
  isCompacting(): boolean
  noteCompacted(bytes: number): void
  noteCorrupt(): void
  noteCheckpoint(bytes: number): void
  stats(): EngineStats
  /** Makes the history windows' appends durable: before a checkpoint or a compaction relies on them. */
  syncHistory(): Promise<void>
  /**
   * Recovery applies an entry at `version` over the key's live `slot` (a tombstone also names
   * itself): the namespace's history window keeps what it has not seen (windows.ts).
   */
  historyRecovering?(
    nsId: number,
    version: number,
    slot: number | undefined,
    tomb: EntryAt | undefined,
  ): void
  /** Recovery meets an entry after a newer version of its key, `current`: it too may be kept. */
  historyRecoveringLate?(nsId: number, current: number, entry: EntryAt): void
}
