// Opening a directory: finishing what a crash interrupted, then rebuilding the index from
// hint files (or the segments themselves), so every acknowledged write is back and no part
// of an unacknowledged batch is. engine/FORMAT.md argues each step.
import path from 'node:path'
import { type Checkpoint, readCheckpoint, removeCheckpoint } from './checkpoint.js'
import type { DbCore } from './db-core.js'
import { EngineError } from './errors.js'
import { fsyncDir, io } from './io.js'
import {
  type Manifest,
  type SealedSegment,
  hintCrcOf,
  readManifest,
  writeManifest,
} from './manifest.js'
import {
  type EntryVisitor,
  type Hint,
  HintBuilder,
  forEachHintEntry,
  readHint,
  writeHint,
} from './hint.js'
import { BaseKeys, GONE } from './base-keys.js'
import { readNamespaces } from './namespaces-file.js'
import {
  COMPACTED_FILE,
  type Namespace,
  SEGMENT_NAME,
  type Segment,
  hintFile,
  noteVersion,
  segmentFile,
} from './parts.js'
import {
  DEL,
  ENTRY_HEADER,
  type EntryInfo,
  PUT,
  REC_HEADER,
  SEG_HEADER,
  isCompactionOutput,
  readSegmentHeader,
} from './record.js'
import { type Dropped, isZero, scanSegment } from './segment-scan.js'
import { SORT_NOW, sortLater, sortNow } from './sorted-build.js'

const HINT_NAME = /^seg-(\d{8})\.hint$/
const LEFTOVER = /^(compact-\d{8}\.tmp|.*\.tmp)$/

/** Rebuilds `db` from its directory. Returns what repair left out (empty without damage). */
export function recover(db: DbCore, repair: boolean): { dropped: Dropped[]; kept: number } {
  const dir = db.dir
  const names = io.readdirSync(dir)
  // Temporary files are only ever renamed into place once complete: a leftover is garbage.
  for (const n of names) if (LEFTOVER.test(n) && n !== 'LOCK') io.rmSync(path.join(dir, n))

  // A compaction that wrote its COMPACTED list had already made its outputs durable and
  // named (and the manifest names them): the segments it lists are superseded and only
  // their deletion was cut short.
  // The manifest names them too (`removed`), in the write that replaced them, which holds
  // even when writing the COMPACTED list failed.
  // Read once here; a damaged one is reported (or set aside by repair) below.
  let onDisk: Manifest | undefined
  let damage: unknown
  try {
    onDisk = readManifest(dir)
  } catch (err) {
    damage = err
  }
  const marker = path.join(dir, COMPACTED_FILE)
  const old = new Set<number>(onDisk?.removed ?? [])
  const hasMarker = io.existsSync(marker)
  if (hasMarker) {
    try {
      for (const id of JSON.parse(io.readFileSync(marker).toString('utf8'))) old.add(id)
    } catch {
      // Written and synced before any deletion, so damage means the crash came first.
    }
  }
  for (const id of old) {
    io.rmSync(path.join(dir, segmentFile(id)))
    io.rmSync(path.join(dir, hintFile(id)))
  }
  if (old.size > 0 || hasMarker) fsyncDir(dir)
  if (hasMarker) io.rmSync(marker)

  db.table = readNamespaces(dir)
  for (const [id, name] of db.table.list) db.keydir.addNamespace(id, name)

  const ids = io
    .readdirSync(dir)
    .map((n) => SEGMENT_NAME.exec(n))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Number(m[1]))
    .sort((a, b) => a - b)
  const idSet = new Set(ids)
  for (const n of io.readdirSync(dir)) {
    const m = HINT_NAME.exec(n)
    if (m && !idSet.has(Number(m[1]))) io.rmSync(path.join(dir, n))
  }

  const dropped: Dropped[] = []
  // Repair trusts neither the manifest nor the hints: it reads every record.
  let manifest: Manifest | undefined
  /** Segments a manifest names: only their zeros can be damage (segment-scan.ts). */
  let sealedIds = new Set<number>()
  if (repair) {
    if (onDisk) dropped.push(...lostSegments(dir, onDisk, idSet))
    sealedIds = new Set(onDisk?.sealed.map((s) => s.id))
  } else {
    if (damage) throw damage
    manifest = onDisk
    if (manifest) checkAgainstManifest(dir, manifest, idSet)
  }
  const listed = new Map((manifest?.sealed ?? []).map((m) => [m.id, m]))
  for (const id of listed.keys()) sealedIds.add(id)
  // A torn write can end only a segment the write path was still appending to: one no
  // manifest names as sealed, not a compaction output (those are fsynced before they are
  // named), and either not older than the one the manifest last named as active or one it
  // names as still being written (the write path had moved on while its last groups were
  // in flight). Every other segment was complete. Repair, and a directory from before
  // manifests, trust only the newest.
  const writable = ids.filter((id) => !sealedIds.has(id) && !madeByCompaction(dir, id))
  const newest = writable.at(-1) ?? -1
  const inFlight = new Set(manifest?.writing ?? [])
  const torn = new Set(
    manifest === undefined
      ? [newest]
      : writable.filter((id) => id >= manifest!.active || inFlight.has(id)),
  )

  // A checkpoint of the index, when nothing doubts it, saves reading the log it covers.
  // Repair trusts nothing but the records, and rewrites segments: the checkpoint goes.
  if (repair) removeCheckpoint(dir)
  else {
    const ck = readCheckpoint(dir)
    if (ck) {
      const kept = fromCheckpoint(db, ck, { dir, ids, idSet, manifest, listed, torn })
      if (kept >= 0) return { dropped: [], kept }
    }
    try {
      // Damaged, stale or of another version: it is never read again.
      removeCheckpoint(dir)
    } catch {}
  }

  const tombs = new Map<Namespace, Map<string, number>>()
  const sealed = new Map<number, SealedSegment>()
  const empty: number[] = []
  let maxVersion = 0
  let kept = 0

  for (const id of ids) {
    const file = path.join(dir, segmentFile(id))
    const size = io.sizeOf(file)
    const entry = listed.get(id)
    // A hint is used as it is only where nothing doubts it: the manifest names this exact
    // hint, or (a directory from before manifests) the hint matches the segment's size.
    let hint = repair ? undefined : readHint(path.join(dir, hintFile(id)), id, size)
    if (hint && (entry ? hint.crc !== entry.hintCrc : manifest !== undefined)) hint = undefined
    let entries: EntryInfo[] = []
    let baseVersion = 0
    let end = size
    let writeHintFrom: Buffer | null = null
    let hintCrc = hint?.crc ?? 0
    if (hint) baseVersion = hint.baseVersion
    else {
      let buf: Buffer = io.readFileSync(file)
      let scan = scanSegment(file, buf, torn.has(id), repair, !sealedIds.has(id))
      if (scan.dropped.length > 0) {
        dropped.push(...scan.dropped)
        if (!scan.header) {
          io.rmSync(file)
          fsyncDir(dir)
          continue
        }
        buf = rewriteWithout(file, buf, scan.dropped, scan.validEnd)
        scan = scanSegment(file, buf, false, false)
      }
      if (!scan.header) {
        // Created just before a crash, header not even complete: holds nothing.
        empty.push(id)
        continue
      }
      if (scan.validEnd < buf.length) io.truncateFileSync(file, scan.validEnd)
      entries = scan.entries
      baseVersion = scan.header.baseVersion
      end = scan.validEnd
      writeHintFrom = buf
    }
    if (baseVersion > maxVersion) maxVersion = baseVersion
    if (end <= SEG_HEADER) {
      // Nothing in it; its base version is already counted.
      empty.push(id)
      continue
    }
    const seg: Segment = {
      id,
      file,
      fd: io.openSync(file, 'r+'),
      written: end,
      durable: end,
      end,
      live: 0,
      hint: null,
      sealed: true,
      unsynced: false,
      baseVersion,
      minVersions: new Map(),
    }
    db.segments.set(id, seg)
    if (id >= db.log.nextSegId) db.log.nextSegId = id + 1
    const visit: EntryVisitor = (type, nsId, key, version, expiresAt, off, len) => {
      kept++
      if (version > maxVersion) maxVersion = version
      noteVersion(seg, nsId, version)
      apply(db, tombs, seg, type, nsId, key, version, expiresAt, off, len)
    }
    if (hint) forEachHintEntry(hint, visit)
    else for (const e of entries) visit(e.type, e.nsId, e.key, e.version, e.expiresAt, e.off, e.len)
    // Every segment found at open is sealed from now on: give it a hint for the next open.
    if (writeHintFrom) {
      const bytes = hintFor(id, end, entries, writeHintFrom, baseVersion)
      writeHint(path.join(dir, hintFile(id)), bytes)
      hintCrc = hintCrcOf(bytes)
    }
    sealed.set(id, { id, size: end, hintCrc })
  }
  for (const id of empty) if (id >= db.log.nextSegId) db.log.nextSegId = id + 1
  // The manifest names what was found before anything found is removed, so a crash in
  // between leaves nothing the next open would take for lost.
  db.log.sealed = sealed
  const versions = settleVersions(db, manifest, maxVersion)
  writeManifest(dir, { active: 0, sealed: [...sealed.values()], versions })
  for (const id of empty) {
    io.rmSync(path.join(dir, segmentFile(id)))
    io.rmSync(path.join(dir, hintFile(id)))
  }
  for (const n of db.keydir.byName.values()) {
    if (n.map.size <= SORT_NOW) sortNow(n)
    else sortLater(n, () => db.isClosed())
  }
  db.version = maxVersion
  db.appliedVersion = maxVersion
  db.openedFrom = 'log'
  return { dropped, kept }
}

interface Found {
  dir: string
  ids: number[]
  idSet: Set<number>
  manifest: Manifest | undefined
  listed: Map<number, SealedSegment>
  /** The segments whose tail may be torn (see recover). */
  torn: Set<number>
}

/** A segment as the open from a checkpoint found it, before the index is touched. */
interface Tail {
  id: number
  file: string
  /** Where the intact data ends. */
  end: number
  baseVersion: number
  /** Known for a segment the checkpoint does not cover (Segment.minVersions). */
  minVersions: Map<number, number> | null
  /** Replay starts here (the checkpoint holds what is before). */
  from: number
  /** The entries after `from`: from its hint, or scanned. */
  hint: Hint | null
  entries: EntryInfo[] | null
  /** A torn tail to cut off (as recover does). */
  cutAt: number
  /** A hint to write, when the whole segment was scanned. */
  hintBytes: Buffer | null
  hintCrc: number
}

/**
 * Opens from a checkpoint: loads its columns and replays the log after the position it
 * covers, with recover's rules for that log. Returns the entries read, or -1, having
 * changed nothing, when anything doubts the checkpoint (FORMAT.md, "CHECKPOINT").
 */
function fromCheckpoint(db: DbCore, ck: Checkpoint, x: Found): number {
  const { dir } = x
  const rows = new Map(ck.segments.map((r) => [r.id, r]))
  // 1. Every segment it relies on is there, the same file, at least as long as it was.
  let maxCovered = 0
  for (const r of ck.segments) maxCovered = Math.max(maxCovered, r.id)
  const limit = new Float64Array(maxCovered + 1)
  for (const r of ck.segments) {
    if (r.from < SEG_HEADER || r.from > r.size) return -1
    if (r.size <= SEG_HEADER) continue
    if (!x.idSet.has(r.id)) return -1
    const file = path.join(dir, segmentFile(r.id))
    if (io.sizeOf(file) < r.size) return -1
    const h = readHeaderOf(file)
    if (!h || h.segId !== r.id || h.baseVersion !== r.baseVersion) return -1
    // It stands in for the hints: where recover would not use a sealed segment's hint (it
    // is missing, or not the one the manifest names), it scans, and so must this open.
    const sealedAt = x.listed.get(r.id)
    if (sealedAt) {
      if (sealedAt.size < r.size) return -1
      if (lastWordOf(path.join(dir, hintFile(r.id))) !== sealedAt.hintCrc) return -1
    }
    limit[r.id] = r.size
  }
  // Any other segment was started by the write path after it. A compaction's output it
  // does not name holds copies at old versions, whose tombstones it may not hold.
  for (const id of x.ids) {
    if (rows.has(id)) continue
    if (id < maxCovered || madeByCompaction(dir, id)) return -1
  }
  // Every entry points inside a segment it checked.
  for (let i = 0; i < ck.count; i++) {
    const sg = ck.seg[i]!
    if (sg > maxCovered || ck.off[i]! < SEG_HEADER || ck.off[i]! + ck.len[i]! > limit[sg]!)
      return -1
  }
  const names = new Map(db.table.list)
  for (const c of ck.namespaces) {
    const name = names.get(c.id)
    if (name !== undefined && name !== c.name) return -1
  }

  // 2. The log after it, read with recover's rules, still without touching the index.
  const tails: Tail[] = []
  const empty: number[] = []
  for (const id of x.ids) {
    const row = rows.get(id)
    const file = path.join(dir, segmentFile(id))
    const size = io.sizeOf(file)
    const entry = x.listed.get(id)
    const t: Tail = {
      id,
      file,
      end: size,
      baseVersion: row?.baseVersion ?? 0,
      minVersions: row === undefined ? new Map() : null,
      from: row?.from ?? SEG_HEADER,
      hint: null,
      entries: null,
      cutAt: -1,
      hintBytes: null,
      hintCrc: entry?.hintCrc ?? 0,
    }
    // A sealed segment is read after `from` from its hint; one that was not sealed is
    // scanned whole, as recover scans it (damage before `from` is found too), and gets its
    // hint, but only its entries after `from` are applied.
    if (!row || t.from < size || !entry) {
      let hint = readHint(path.join(dir, hintFile(id)), id, size)
      if (hint && (entry ? hint.crc !== entry.hintCrc : x.manifest !== undefined)) hint = undefined
      if (hint) {
        t.hint = hint
        if (!row) t.baseVersion = hint.baseVersion
      } else {
        const buf: Buffer = io.readFileSync(file)
        const scan = scanSegment(file, buf, x.torn.has(id), false, !entry)
        if (!scan.header) {
          if (row && row.size > SEG_HEADER) return -1
          empty.push(id)
          continue
        }
        if (row && scan.validEnd < row.size) return -1
        if (scan.validEnd < buf.length) t.cutAt = scan.validEnd
        t.entries = scan.entries
        t.end = scan.validEnd
        if (!row) t.baseVersion = scan.header.baseVersion
        t.hintBytes = hintFor(id, t.end, scan.entries, buf, t.baseVersion)
        t.hintCrc = hintCrcOf(t.hintBytes)
      }
    }
    if (t.end <= SEG_HEADER) {
      if (row && row.size > SEG_HEADER) return -1
      empty.push(id)
      continue
    }
    tails.push(t)
  }

  // 3. Nothing doubts it: the index is its columns, a copy of typed arrays.
  const s = db.keydir.slots
  s.adopt(ck.count, ck.seg, ck.off, ck.len, ck.version, ck.expires)
  const live = new Float64Array(maxCovered + 1)
  const fromCkpt = new Set<Namespace>()
  for (const c of ck.namespaces) {
    const n = db.keydir.byId.get(c.id)
    const slots = new Uint32Array(c.count)
    for (let i = 0; i < c.count; i++) {
      const slot = c.first + i
      const exp = s.expires[slot]!
      // A dropped namespace's keys are dead. An expired key stays, as in a running index, so
      // its expiry is written (with a version, and a delete for watchers) once open: taken for
      // its own tombstone here, it went with no delete ever sent.
      if (!n) {
        slots[i] = GONE
        s.release(slot)
        continue
      }
      slots[i] = slot
      const len = s.len[slot]!
      n.bytes += len - ENTRY_HEADER
      if (exp !== 0) n.ttl++
      live[s.seg[slot]!] += len
    }
    if (!n) continue
    if (c.version > n.version) n.version = c.version
    const start = c.first === 0 ? 0 : ck.ends[c.first - 1]!
    // Its keys stay as the checkpoint holds them, in order: listings merge them with the
    // sorted list of keys written from here on (keydir.ts), which starts empty.
    if (c.count > 0) {
      const base = new BaseKeys(ck.blob, start, ck.ends.subarray(c.first, c.first + c.count), slots)
      base.hashed = base.hash(() => db.isClosed())
      n.map.base = base
    }
    fromCkpt.add(n)
  }

  // 4. Every segment, then the log after the checkpoint, in the order it was written.
  let maxVersion = ck.maxVersion
  for (const r of ck.segments) if (r.baseVersion > maxVersion) maxVersion = r.baseVersion
  const sealed = new Map<number, SealedSegment>()
  const segs: Segment[] = []
  for (const t of tails) {
    if (t.cutAt >= 0) io.truncateFileSync(t.file, t.cutAt)
    if (t.baseVersion > maxVersion) maxVersion = t.baseVersion
    const seg: Segment = {
      id: t.id,
      file: t.file,
      fd: io.openSync(t.file, 'r+'),
      written: t.end,
      durable: t.end,
      end: t.end,
      live: t.id <= maxCovered ? live[t.id]! : 0,
      hint: null,
      sealed: true,
      unsynced: false,
      baseVersion: t.baseVersion,
      minVersions: t.minVersions,
    }
    db.segments.set(t.id, seg)
    segs.push(seg)
  }
  const tombs = new Map<Namespace, Map<string, number>>()
  let kept = ck.count
  tails.forEach((t, i) => {
    const seg = segs[i]!
    const visit: EntryVisitor = (type, nsId, key, version, expiresAt, off, len) => {
      kept++
      if (version > maxVersion) maxVersion = version
      noteVersion(seg, nsId, version)
      apply(db, tombs, seg, type, nsId, key, version, expiresAt, off, len, fromCkpt)
    }
    if (t.hint) forEachHintEntry(t.hint, visit, t.from)
    else if (t.entries)
      for (const e of t.entries)
        if (e.off >= t.from) visit(e.type, e.nsId, e.key, e.version, e.expiresAt, e.off, e.len)
    if (t.hintBytes) writeHint(path.join(dir, hintFile(t.id)), t.hintBytes)
    sealed.set(t.id, x.listed.get(t.id) ?? { id: t.id, size: t.end, hintCrc: t.hintCrc })
  })
  for (const id of x.ids) if (id >= db.log.nextSegId) db.log.nextSegId = id + 1

  // 5. As recover ends.
  db.log.sealed = sealed
  const versions = settleVersions(db, x.manifest, maxVersion)
  writeManifest(dir, { active: 0, sealed: [...sealed.values()], versions })
  for (const id of empty) {
    io.rmSync(path.join(dir, segmentFile(id)))
    io.rmSync(path.join(dir, hintFile(id)))
  }
  for (const n of db.keydir.byName.values()) {
    if (fromCkpt.has(n)) continue
    if (n.map.size <= SORT_NOW) sortNow(n)
    else sortLater(n, () => db.isClosed())
  }
  db.version = maxVersion
  db.appliedVersion = maxVersion
  db.openedFrom = 'checkpoint'
  db.checkpointCurrent = kept === ck.count
  return kept
}

/** The last four bytes of a file (a hint's checksum), or undefined when it has none. */
function lastWordOf(file: string): number | undefined {
  if (!io.existsSync(file)) return undefined
  const size = io.sizeOf(file)
  if (size < 4) return undefined
  const fd = io.openSync(file, 'r')
  try {
    const b = Buffer.alloc(4)
    return io.readSync(fd, b, 0, 4, size - 4) === 4 ? b.readUInt32LE(0) : undefined
  } finally {
    io.closeSync(fd)
  }
}

/** A segment's header, or undefined when it is not whole. */
function readHeaderOf(file: string) {
  const fd = io.openSync(file, 'r')
  try {
    const b = Buffer.alloc(SEG_HEADER)
    return io.readSync(fd, b, 0, SEG_HEADER, 0) === SEG_HEADER ? readSegmentHeader(b) : undefined
  } finally {
    io.closeSync(fd)
  }
}

const openWith = (dir: string) =>
  `restore it from a backup, or run \`cairn repair --data ${dir}\` to keep every intact record`

/**
 * What the manifest promises, checked before any record is read: every sealed segment it
 * names is there and at least as long as when it was sealed. A longer one holds only writes
 * that failed (their tail could not be cut), which were never acknowledged: it is cut back.
 */
function checkAgainstManifest(dir: string, m: Manifest, ids: Set<number>): void {
  for (const s of m.sealed) {
    const name = segmentFile(s.id)
    if (!ids.has(s.id))
      throw new EngineError(
        'CORRUPT',
        `${name} is missing (the manifest lists it); ${openWith(dir)}`,
      )
    const file = path.join(dir, name)
    const size = io.sizeOf(file)
    if (size < s.size)
      throw new EngineError(
        'CORRUPT',
        `${name} is cut short: ${size} bytes, sealed at ${s.size} (damage from offset ${size}); ${openWith(dir)}`,
      )
    if (size > s.size) io.truncateFileSync(file, s.size)
  }
  if (m.active !== 0 && !ids.has(m.active) && ![...ids].some((id) => id > m.active))
    throw new EngineError(
      'CORRUPT',
      `${segmentFile(m.active)}, the segment last written to, is missing; ${openWith(dir)}`,
    )
}

/** For repair's report: sealed segments the manifest names that are gone or cut short. */
function lostSegments(dir: string, m: Manifest, ids: Set<number>): Dropped[] {
  const out: Dropped[] = []
  for (const s of m.sealed) {
    const name = segmentFile(s.id)
    if (!ids.has(s.id)) out.push({ file: name, from: 0, to: s.size, reason: 'segment missing' })
    else {
      const file = path.join(dir, name)
      const size = io.sizeOf(file)
      if (size < s.size)
        out.push({ file: name, from: size, to: s.size, reason: 'segment cut short' })
      // Zeros past its sealed end are what a crash kept its seal from cutting off
      // ("Preallocation"), not damage to report.
      else if (size > s.size && zerosFrom(file, s.size)) io.truncateFileSync(file, s.size)
    }
  }
  return out
}

/** Whether everything in `file` from `at` on is zero bytes (only that part is read). */
function zerosFrom(file: string, at: number): boolean {
  const fd = io.openSync(file, 'r')
  try {
    const b = Buffer.alloc(io.sizeOf(file) - at)
    return io.readSync(fd, b, 0, b.length, at) === b.length && isZero(b, 0, b.length)
  } finally {
    io.closeSync(fd)
  }
}

/** Whether the segment's header says compaction wrote it (record.ts, isCompactionOutput). */
function madeByCompaction(dir: string, id: number): boolean {
  const fd = io.openSync(path.join(dir, segmentFile(id)), 'r')
  try {
    const b = Buffer.alloc(SEG_HEADER)
    return isCompactionOutput(b.subarray(0, io.readSync(fd, b, 0, SEG_HEADER, 0)))
  } finally {
    io.closeSync(fd)
  }
}

/**
 * Each namespace's version after the log is read: the highest any of its entries carries,
 * but never below the manifest's floor for it (a tombstone that carried it may have been
 * compacted away). A manifest from before per-namespace versions has no floors: every
 * namespace then starts above the old database-wide counter, so no version is handed out
 * twice. Returns them as the manifest keeps them.
 */
function settleVersions(
  db: DbCore,
  manifest: Manifest | undefined,
  maxVersion: number,
): [number, number][] {
  const floors = manifest?.versions ? new Map(manifest.versions) : undefined
  const out: [number, number][] = []
  for (const n of db.keydir.byId.values()) {
    const floor = floors ? (floors.get(n.id) ?? 0) : maxVersion
    if (floor > n.version) n.version = floor
    n.applied = n.version
    out.push([n.id, n.version])
  }
  return out
}

/** Applies one entry: the highest version of a key wins, a later entry on a tie. */
function apply(
  db: DbCore,
  tombs: Map<Namespace, Map<string, number>>,
  seg: Segment,
  type: number,
  nsId: number,
  key: string,
  version: number,
  expiresAt: number,
  off: number,
  len: number,
  /** Namespaces whose sorted list exists already (an open from a checkpoint) and is kept up. */
  sorted: Set<Namespace> | null = null,
): void {
  const n = db.keydir.byId.get(nsId)
  if (!n) return // a dropped namespace: dead
  if (version > n.version) n.version = version
  const recovering = sorted === null || !sorted.has(n)
  let tomb = tombs.get(n)
  const slot = n.map.get(key)
  const current = slot !== undefined ? db.keydir.slots.version[slot]! : (tomb?.get(key) ?? -1)
  if (version < current) {
    // Met after a newer version of its key: a copy compaction moved into a segment of a
    // higher id than the write that superseded it. A window that has not seen that write
    // keeps this version, as it would have had the replay met them in order.
    db.historyRecoveringLate?.(nsId, current, { seg: seg.id, off, len })
    return
  }
  // A history window that has not seen this version keeps what it supersedes (windows.ts).
  db.historyRecovering?.(nsId, version, slot, type === DEL ? { seg: seg.id, off, len } : undefined)
  // An expired put is applied as live, as in a running index: its expiry is written (with a
  // version, and a delete for watchers) once open (see the checkpoint's load above).
  if (type === PUT) {
    db.keydir.setLive(n, key, seg, off, len, version, expiresAt, recovering, slot)
    tomb?.delete(key)
    return
  }
  if (type === DEL) {
    if (slot !== undefined) db.keydir.remove(n, key, recovering)
    if (!tomb) {
      tomb = new Map()
      tombs.set(n, tomb)
    }
    tomb.set(key, version)
  }
}

function hintFor(
  id: number,
  size: number,
  entries: EntryInfo[],
  buf: Buffer,
  baseVersion: number,
): Buffer {
  const h = new HintBuilder()
  for (const e of entries) h.add(buf, e.off, e.off)
  return h.finish(id, size, baseVersion)
}

/** Repair: writes the segment again without the damaged spans (and without a torn tail). */
function rewriteWithout(file: string, buf: Buffer, dropped: Dropped[], validEnd: number): Buffer {
  const keep: Buffer[] = []
  let p = 0
  const spans = dropped
    .filter((d) => d.file === path.basename(file))
    .sort((a, b) => a.from - b.from)
  for (const d of spans) {
    if (d.from > p) keep.push(buf.subarray(p, d.from))
    p = Math.max(p, d.to)
  }
  if (p < validEnd) keep.push(buf.subarray(p, validEnd))
  const out = Buffer.concat(keep)
  io.writeFileAtomicSync(file, out)
  fsyncDir(path.dirname(file))
  return out
}

export function checkOptions(o: {
  segmentBytes?: number
  cacheBytes?: number
  syncIntervalMs?: number
  durability?: string
}): void {
  const bad = (msg: string) => {
    throw new EngineError('INVALID_ARGUMENT', msg)
  }
  if (o.durability !== undefined && !['always', 'interval', 'none'].includes(o.durability))
    bad('durability is always, interval or none')
  if (
    o.segmentBytes !== undefined &&
    !(Number.isInteger(o.segmentBytes) && o.segmentBytes >= REC_HEADER + 1024)
  )
    bad('segmentBytes must be an integer of at least 1036')
  if (o.cacheBytes !== undefined && !(Number.isInteger(o.cacheBytes) && o.cacheBytes >= 0))
    bad('cacheBytes must be an integer >= 0')
  if (o.syncIntervalMs !== undefined && !(o.syncIntervalMs > 0)) bad('syncIntervalMs must be > 0')
}
