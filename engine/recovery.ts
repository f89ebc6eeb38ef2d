// Opening a directory: finishing what a crash interrupted, then rebuilding the index from
// hint files (or the segments themselves), so every acknowledged write is back and no part
// of an unacknowledged batch is. engine/FORMAT.md argues each step.
import fs from 'node:fs'
import path from 'node:path'
import type { Db } from './db.js'
import { EngineError } from './errors.js'
import { fsyncDir } from './io.js'
import { type EntryVisitor, HintBuilder, forEachHintEntry, readHint, writeHint } from './hint.js'
import { readNamespaces } from './namespaces-file.js'
import { COMPACTED_FILE, type Namespace, SEGMENT_NAME, type Segment, hintFile } from './parts.js'
import { DEL, type EntryInfo, PUT, REC_HEADER, SEG_COMPACTED, SEG_HEADER } from './record.js'
import { type Dropped, scanSegment } from './segment-scan.js'
import { SORT_NOW, sortLater, sortNow } from './sorted-build.js'

const HINT_NAME = /^seg-(\d{8})\.hint$/
const LEFTOVER = /^(compact-\d{8}\.tmp|.*\.tmp)$/

/** Rebuilds `db` from its directory. Returns what repair left out (empty without damage). */
export function recover(db: Db, repair: boolean): Dropped[] {
  const dir = db.dir
  const names = fs.readdirSync(dir)
  // Temporary files are only ever renamed into place once complete: a leftover is garbage.
  for (const n of names)
    if (LEFTOVER.test(n) && n !== 'LOCK') fs.rmSync(path.join(dir, n), { force: true })

  // A compaction that wrote its COMPACTED list had already made its outputs durable and
  // named: the segments it lists are superseded and only their deletion was cut short.
  const marker = path.join(dir, COMPACTED_FILE)
  if (fs.existsSync(marker)) {
    let old: number[] = []
    try {
      old = JSON.parse(fs.readFileSync(marker, 'utf8'))
    } catch {
      // Written and fsynced before any deletion, so damage means the crash came first.
      old = []
    }
    for (const id of old) {
      fs.rmSync(path.join(dir, `seg-${String(id).padStart(8, '0')}.seg`), { force: true })
      fs.rmSync(path.join(dir, hintFile(id)), { force: true })
    }
    fsyncDir(dir)
    fs.rmSync(marker, { force: true })
  }

  db.table = readNamespaces(dir)
  for (const [id, name] of db.table.list) db.addNamespace(id, name)

  const ids = fs
    .readdirSync(dir)
    .map((n) => SEGMENT_NAME.exec(n))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Number(m[1]))
    .sort((a, b) => a - b)
  const idSet = new Set(ids)
  for (const n of fs.readdirSync(dir)) {
    const m = HINT_NAME.exec(n)
    if (m && !idSet.has(Number(m[1]))) fs.rmSync(path.join(dir, n), { force: true })
  }

  const dropped: Dropped[] = []
  const tombs = new Map<Namespace, Map<string, number>>()
  let maxVersion = 0
  const now = Date.now()

  for (const id of ids) {
    const file = path.join(dir, `seg-${String(id).padStart(8, '0')}.seg`)
    const size = fs.statSync(file).size
    const hint = readHint(path.join(dir, hintFile(id)), id, size)
    let entries: EntryInfo[] = []
    let baseVersion = 0
    let end = size
    let writeHintFrom: Buffer | null = null
    if (hint) baseVersion = hint.baseVersion
    else {
      let buf: Buffer = fs.readFileSync(file)
      // Only a segment the write path was appending to can be cut short by a crash, and
      // only one without a hint: a hint is written once the segment is whole.
      const flags = buf.length >= SEG_HEADER ? buf.readUInt32LE(28) : 0
      let scan = scanSegment(file, buf, (flags & SEG_COMPACTED) === 0, repair)
      if (scan.dropped.length > 0) {
        dropped.push(...scan.dropped)
        if (!scan.header) {
          fs.rmSync(file, { force: true })
          fsyncDir(dir)
          continue
        }
        buf = rewriteWithout(file, buf, scan.dropped, scan.validEnd)
        scan = scanSegment(file, buf, false, false)
      }
      if (!scan.header) {
        // Created just before a crash, header not even complete: holds nothing.
        fs.rmSync(file, { force: true })
        continue
      }
      if (scan.validEnd < buf.length) {
        const fd = fs.openSync(file, 'r+')
        fs.ftruncateSync(fd, scan.validEnd)
        fs.fsyncSync(fd)
        fs.closeSync(fd)
      }
      entries = scan.entries
      baseVersion = scan.header.baseVersion
      end = scan.validEnd
      writeHintFrom = buf
    }
    if (baseVersion > maxVersion) maxVersion = baseVersion
    if (end <= SEG_HEADER) {
      // Nothing in it; its base version is already counted.
      fs.rmSync(file, { force: true })
      fs.rmSync(path.join(dir, hintFile(id)), { force: true })
      continue
    }
    const seg: Segment = {
      id,
      file,
      fd: fs.openSync(file, 'r+'),
      written: end,
      durable: end,
      end,
      live: 0,
      hint: null,
      sealed: true,
      unsynced: false,
      baseVersion,
    }
    db.segments.set(id, seg)
    if (id >= db.log.nextSegId) db.log.nextSegId = id + 1
    const visit: EntryVisitor = (type, nsId, key, version, expiresAt, off, len) => {
      if (version > maxVersion) maxVersion = version
      apply(db, tombs, seg, type, nsId, key, version, expiresAt, off, len, now)
    }
    if (hint) forEachHintEntry(hint, visit)
    else for (const e of entries) visit(e.type, e.nsId, e.key, e.version, e.expiresAt, e.off, e.len)
    // Every segment found at open is sealed from now on: give it a hint for the next open.
    if (writeHintFrom)
      writeHint(path.join(dir, hintFile(id)), hintFor(id, end, entries, writeHintFrom, baseVersion))
  }
  for (const n of db.byName.values()) {
    if (n.map.size <= SORT_NOW) sortNow(n)
    else sortLater(n, () => db.isClosed())
  }
  db.version = maxVersion
  return dropped
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
  const n = db.byId.get(nsId)
  if (!n) return // a dropped namespace: dead
  let tomb = tombs.get(n)
  const slot = n.map.get(key)
  const current = slot !== undefined ? db.slots.version[slot]! : (tomb?.get(key) ?? -1)
  if (version < current) return
  const expired = type === PUT && expiresAt !== 0 && expiresAt <= now
  if (type === PUT && !expired) {
    db.setLive(n, key, seg, off, len, version, expiresAt, true, slot)
    tomb?.delete(key)
    return
  }
  if (type === DEL || expired) {
    if (slot !== undefined) db.remove(n, key, true)
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
  const tmp = `${file}.tmp`
  const fd = fs.openSync(tmp, 'w')
  fs.writeSync(fd, out)
  fs.fsyncSync(fd)
  fs.closeSync(fd)
  fs.renameSync(tmp, file)
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
