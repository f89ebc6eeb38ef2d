// Opening a directory: finishing what a crash interrupted, then rebuilding the index from
// hint files (or the segments themselves), so every acknowledged write is back and no part
// of an unacknowledged batch is. engine/FORMAT.md argues each step.
import path from 'node:path'
import type { Db } from './db.js'
import { EngineError } from './errors.js'
import { fsyncDir, io } from './io.js'
import {
  type Manifest,
  type SealedSegment,
  hintCrcOf,
  readManifest,
  writeManifest,
} from './manifest.js'
import { type EntryVisitor, HintBuilder, forEachHintEntry, readHint, writeHint } from './hint.js'
import { readNamespaces } from './namespaces-file.js'
import {
  COMPACTED_FILE,
  type Namespace,
  SEGMENT_NAME,
  type Segment,
  hintFile,
  segmentFile,
} from './parts.js'
import { DEL, type EntryInfo, PUT, REC_HEADER, SEG_COMPACTED, SEG_HEADER } from './record.js'
import { type Dropped, scanSegment } from './segment-scan.js'
import { SORT_NOW, sortLater, sortNow } from './sorted-build.js'

const HINT_NAME = /^seg-(\d{8})\.hint$/
const LEFTOVER = /^(compact-\d{8}\.tmp|.*\.tmp)$/

/** Rebuilds `db` from its directory. Returns what repair left out (empty without damage). */
export function recover(db: Db, repair: boolean): { dropped: Dropped[]; kept: number } {
  const dir = db.dir
  const names = io.readdirSync(dir)
  // Temporary files are only ever renamed into place once complete: a leftover is garbage.
  for (const n of names) if (LEFTOVER.test(n) && n !== 'LOCK') io.rmSync(path.join(dir, n))

  // A compaction that wrote its COMPACTED list had already made its outputs durable and
  // named (and the manifest names them): the segments it lists are superseded and only
  // their deletion was cut short.
  const marker = path.join(dir, COMPACTED_FILE)
  if (io.existsSync(marker)) {
    let old: number[] = []
    try {
      old = JSON.parse(io.readFileSync(marker).toString('utf8'))
    } catch {
      // Written and synced before any deletion, so damage means the crash came first.
      old = []
    }
    for (const id of old) {
      io.rmSync(path.join(dir, segmentFile(id)))
      io.rmSync(path.join(dir, hintFile(id)))
    }
    fsyncDir(dir)
    io.rmSync(marker)
  }

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
  if (repair) {
    try {
      manifest = readManifest(dir)
    } catch {}
    if (manifest) dropped.push(...lostSegments(dir, manifest, idSet))
    manifest = undefined
  } else {
    manifest = readManifest(dir)
    if (manifest) checkAgainstManifest(dir, manifest, idSet)
  }
  const listed = new Map((manifest?.sealed ?? []).map((m) => [m.id, m]))
  // Only the segment the write path appended to last can end in a torn write.
  let newest = -1
  for (const id of ids) if (!listed.has(id) && !isCompactionOutput(dir, id)) newest = id

  const tombs = new Map<Namespace, Map<string, number>>()
  const sealed = new Map<number, SealedSegment>()
  const empty: number[] = []
  let maxVersion = 0
  let kept = 0
  const now = Date.now()

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
      let scan = scanSegment(file, buf, id === newest, repair)
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
      minVersion: Number.POSITIVE_INFINITY,
    }
    db.segments.set(id, seg)
    if (id >= db.log.nextSegId) db.log.nextSegId = id + 1
    const visit: EntryVisitor = (type, nsId, key, version, expiresAt, off, len) => {
      kept++
      if (version > maxVersion) maxVersion = version
      if (version < seg.minVersion) seg.minVersion = version
      apply(db, tombs, seg, type, nsId, key, version, expiresAt, off, len, now)
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
  writeManifest(dir, { active: 0, sealed: [...sealed.values()] })
  for (const id of empty) {
    io.rmSync(path.join(dir, segmentFile(id)))
    io.rmSync(path.join(dir, hintFile(id)))
  }
  for (const n of db.keydir.byName.values()) {
    if (n.map.size <= SORT_NOW) sortNow(n)
    else sortLater(n, () => db.isClosed())
  }
  db.version = maxVersion
  return { dropped, kept }
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
      const size = io.sizeOf(path.join(dir, name))
      if (size < s.size)
        out.push({ file: name, from: size, to: s.size, reason: 'segment cut short' })
    }
  }
  return out
}

function isCompactionOutput(dir: string, id: number): boolean {
  const fd = io.openSync(path.join(dir, segmentFile(id)), 'r')
  try {
    const b = Buffer.alloc(SEG_HEADER)
    return (
      io.readSync(fd, b, 0, SEG_HEADER, 0) === SEG_HEADER &&
      (b.readUInt32LE(28) & SEG_COMPACTED) !== 0
    )
  } finally {
    io.closeSync(fd)
  }
}

/** Applies one entry: the highest version of a key wins, a later entry on a tie. */
function apply(
  db: Db,
  tombs: Map<Namespace, Map<string, number>>,
  seg: Segment,
  type: number,
  nsId: number,
  key: string,
  version: number,
  expiresAt: number,
  off: number,
  len: number,
  now: number,
): void {
  const n = db.keydir.byId.get(nsId)
  if (!n) return // a dropped namespace: dead
  let tomb = tombs.get(n)
  const slot = n.map.get(key)
  const current = slot !== undefined ? db.keydir.slots.version[slot]! : (tomb?.get(key) ?? -1)
  if (version < current) return
  const expired = type === PUT && expiresAt !== 0 && expiresAt <= now
  if (type === PUT && !expired) {
    db.keydir.setLive(n, key, seg, off, len, version, expiresAt, true, slot)
    tomb?.delete(key)
    return
  }
  if (type === DEL || expired) {
    if (slot !== undefined) db.keydir.remove(n, key, true)
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
  for (const e of entries) {
    const keyLen = Buffer.byteLength(e.key)
    h.add(e.type, e.flags, keyLen, e.nsId, e.version, e.expiresAt, e.off, e.len, buf, e.off + 32)
  }
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
