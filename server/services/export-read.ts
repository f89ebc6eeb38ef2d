// What an export reads (the contract's "Export and import"): the range as it was at one
// version, a page at a time, whatever is written meanwhile.
//
// An export at a past point (`at=`) is a listing at that version (EntryHistory.listAt, the
// engine's listAt), in pages: the history window keeps every version a write supersedes
// meanwhile, so each page is the state at the header's version. An export of the present (no
// `at`, or `at` the namespace's current version) reads the store's snapshot (Store.snapshot),
// which keeps for it what writes replace, for two reasons (docs/api.md, "Exports are
// consistent"): a namespace whose plan keeps no history cannot read a version at all once it
// is past; and listAt costs more per entry than the snapshot, since it looks each key up in
// the window as well as in the index (an export at a point with half its entries rewritten
// since: about 0.6x the present's entries per server CPU second, bench/portable.ts). Writes
// between its pages cost it little, keys new to the window included (the window keeps its
// keys in order: bench/engine.ts --history --walk-only).
import type { NamespaceInfo } from './accounts.js'
import type { History } from './history.js'
import { ApiError } from '../wire/errors.js'
import type {
  ExportedEntry,
  HistoryPoint,
  KeyRangeOptions,
  Listed,
  ListedEntry,
  RangeSnapshot,
  Store,
} from '../store/types.js'

const include = { values: true, metadata: true }

function exported(e: ListedEntry): ExportedEntry {
  const out: ExportedEntry = { key: e.key, value: e.value!, version: e.version }
  if (e.expiresAt !== undefined) out.expiresAt = e.expiresAt
  if (e.metadata != null) out.metadata = e.metadata
  return out
}

/** A read at a point in pages of listAt; the first page is read before it is handed out. */
class PointRead implements RangeSnapshot {
  private after: string | undefined
  private ended = false

  private constructor(
    private read: (after: string | undefined, limit: number) => Promise<Listed>,
    readonly version: number,
    private first: Listed | undefined,
  ) {
    this.take(first!)
  }

  static async open(
    read: (after: string | undefined, limit: number) => Promise<Listed>,
  ): Promise<PointRead> {
    // Small: its work is only to resolve the point (and refuse it) before the stream opens.
    const first = await read(undefined, 16)
    return new PointRead(read, first.version, first)
  }

  private take(page: Listed): void {
    this.after = page.next
    if (page.next === undefined) this.ended = true
  }

  async next(limit: number): Promise<ExportedEntry[]> {
    const held = this.first
    if (held !== undefined) {
      this.first = undefined
      return (held.entries ?? []).map(exported)
    }
    if (this.ended) return []
    const page = await this.read(this.after, limit)
    this.take(page)
    return (page.entries ?? []).map(exported)
  }

  close(): void {
    this.ended = true
    this.first = undefined
  }
}

/** The read of an export of the range: at the point, or at the present when none is given. */
export async function exportRead(
  svc: { store: Store; history: History },
  info: NamespaceInfo,
  range: KeyRangeOptions,
  point: HistoryPoint | undefined,
): Promise<RangeSnapshot> {
  const ns = info.storeName
  if (point === undefined) return svc.store.snapshot(ns, range)
  // Refuses a point that cannot be read (on a store without history, every one but the present).
  const version = await svc.history.versionOf(info, point)
  if (svc.store.history === undefined || version === (await svc.store.feed.version(ns))) {
    // The present is read as an export of the present, so a namespace without a window, whose
    // listAt cannot go on once it is written past, exports it whole too.
    const snap = await svc.store.snapshot(ns, range)
    if (snap.version === version) return snap
    snap.close()
    // Written meanwhile: the point is past now, and only a store with history can read it.
    if (svc.store.history === undefined)
      throw new ApiError(
        'history_expired',
        `Version ${version} is older than the history, which begins at ${snap.version}.`,
      )
  }
  const bounds = {
    prefix: range.prefix || undefined,
    start: range.start || undefined,
    end: range.end || undefined,
  }
  // The version the point resolved to, on every page: a time stays the same state throughout.
  const at: HistoryPoint = { version }
  const read = (after: string | undefined, limit: number) =>
    svc.history.listAt(info, { ...bounds, after, limit, include }, at)
  return PointRead.open(read)
}
