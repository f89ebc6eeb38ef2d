// The index checkpoint: the key directory as flat, sorted columns in one file, with the log
// position it covers, so `open` reads one file and replays only the log after it instead of
// every hint. It is only a shortcut, like a hint: recovery.ts uses it only when nothing
// doubts it, and otherwise recovers from the log as if it did not exist. FORMAT.md gives
// the layout and argues when it is trusted and why a crash at any point is safe.
import os from 'node:os'
import path from 'node:path'
import { crc32 } from 'node:zlib'
import type { DbCore } from './db-core.js'
import { fsyncDirAsync, io } from './io.js'
import type { Namespace } from './parts.js'
import { SEG_HEADER } from './record.js'
import { Slots } from './slots.js'
import { fold, wantsFold } from './fold.js'
import { Columns, type WalkedKeys, walkKeys } from './key-walk.js'
import { sortKeys } from './utf8.js'
import { SLICE_MS, yieldToRequests } from './yield.js'

export const CHECKPOINT_FILE = 'CHECKPOINT'
export const CKPT_MAGIC = Buffer.from('CAIRNCKP')
/** 2: namespace rows carry the namespace's version (versions count per namespace). */
export const CKPT_VERSION = 2
/** magic(8) version(u32) segments(u32) namespaces(u32) entries(u32) maxVersion(f64) keyBytes(u32) nsTableBytes(u32), reserved to 64 */
export const CKPT_HEADER = 64
/** id(u32) from(u32) size(u32) reserved(u32) baseVersion(f64) minVersion(f64) reserved(8) */
export const CKPT_SEGMENT = 40
/** id(u32) count(u32) nameLen(u32) reserved(u32) version(f64), then the name's bytes */
const NS_ROW = 24
/** Bytes of columns per entry: version, expiresAt (f64); segment, offset, length, key end (u32). */
const COLUMN_BYTES = 32
/** The columns are read as typed arrays in place, which is the machine's byte order. */
export const CHECKPOINTS_WORK = os.endianness() === 'LE'

export interface CkptSegment {
  id: number
  /** Replay of the log starts here: everything before it is in the checkpoint. */
  from: number
  /** Bytes the segment must hold: entries of the checkpoint point below this. */
  size: number
  baseVersion: number
  minVersion: number
}

export interface CkptNamespace {
  id: number
  name: string
  /** Its entries are first .. first + count - 1, keys in UTF-8 byte order. */
  first: number
  count: number
  /** The namespace's version when the checkpoint was taken (its deletes included). */
  version: number
}

export interface Checkpoint {
  maxVersion: number
  segments: CkptSegment[]
  namespaces: CkptNamespace[]
  count: number
  /** The index's own columns: entries 0 .. count - 1, with room after them to grow. */
  version: Float64Array
  expires: Float64Array
  seg: Uint32Array
  off: Uint32Array
  len: Uint32Array
  /** End of each key in blob (the first key starts at 0). */
  ends: Uint32Array
  blob: Buffer
  /** Size of the file, for figures. */
  bytes: number
}

/**
 * The checkpoint, or undefined when there is none or anything about it is wrong. It is read
 * piece by piece, each column straight into the typed array the index keeps (with room for
 * the index to grow, Slots.capacityFor), and the keys into a buffer of their own: no buffer
 * of the whole file is made, copied out of, and left for the collector.
 */
export function readCheckpoint(dir: string): Checkpoint | undefined {
  if (!CHECKPOINTS_WORK) return undefined
  const file = path.join(dir, CHECKPOINT_FILE)
  if (!io.existsSync(file)) return undefined
  let fd = -1
  try {
    fd = io.openSync(file, 'r')
    return readFrom(fd, io.sizeOf(file))
  } catch {
    return undefined
  } finally {
    if (fd >= 0) {
      try {
        io.closeSync(fd)
      } catch {}
    }
  }
}

function readFrom(fd: number, size: number): Checkpoint | undefined {
  let at = 0
  let crc = 0
  /** Fills `into` from the file's next bytes, and folds them into the checksum. */
  const next = (into: Buffer): Buffer => {
    let got = 0
    while (got < into.length) {
      const n = io.readSync(fd, into, got, into.length - got, at + got)
      if (n <= 0) throw new Error('short checkpoint')
      got += n
    }
    at += into.length
    crc = crc32(into, crc)
    return into
  }
  const bytesOf = (a: Float64Array | Uint32Array, n: number) =>
    Buffer.from(a.buffer, a.byteOffset, n * a.BYTES_PER_ELEMENT)

  if (size < CKPT_HEADER + 4) return undefined
  const h = next(Buffer.alloc(CKPT_HEADER))
  if (!h.subarray(0, 8).equals(CKPT_MAGIC)) return undefined
  if (h.readUInt32LE(8) !== CKPT_VERSION) return undefined
  const segCount = h.readUInt32LE(12)
  const nsCount = h.readUInt32LE(16)
  const count = h.readUInt32LE(20)
  const maxVersion = h.readDoubleLE(24)
  const keyBytes = h.readUInt32LE(32)
  const nsTable = h.readUInt32LE(36)
  const nsAt = CKPT_HEADER + segCount * CKPT_SEGMENT
  const colAt = nsAt + nsTable
  // The sizes must add up to the file's before anything is allocated by them.
  if (nsTable % 8 !== 0 || colAt + count * COLUMN_BYTES + keyBytes + 4 !== size) return undefined
  const b = next(Buffer.alloc(colAt - CKPT_HEADER))
  const segments: CkptSegment[] = []
  for (let i = 0, p = 0; i < segCount; i++, p += CKPT_SEGMENT) {
    segments.push({
      id: b.readUInt32LE(p),
      from: b.readUInt32LE(p + 4),
      size: b.readUInt32LE(p + 8),
      baseVersion: b.readDoubleLE(p + 16),
      minVersion: b.readDoubleLE(p + 24),
    })
  }
  const namespaces: CkptNamespace[] = []
  let first = 0
  const tableEnd = colAt - CKPT_HEADER
  for (let i = 0, p = nsAt - CKPT_HEADER; i < nsCount; i++) {
    if (p + NS_ROW > tableEnd) return undefined
    const id = b.readUInt32LE(p)
    const n = b.readUInt32LE(p + 4)
    const nameLen = b.readUInt32LE(p + 8)
    const version = b.readDoubleLE(p + 16)
    if (p + NS_ROW + nameLen > tableEnd) return undefined
    const name = b.toString('utf8', p + NS_ROW, p + NS_ROW + nameLen)
    namespaces.push({ id, name, first, count: n, version })
    first += n
    p += NS_ROW + nameLen
  }
  if (first !== count) return undefined
  const cap = Slots.capacityFor(count)
  const version = new Float64Array(cap)
  const expires = new Float64Array(cap)
  const seg = new Uint32Array(cap)
  const off = new Uint32Array(cap)
  const len = new Uint32Array(cap)
  const ends = new Uint32Array(count)
  for (const col of [version, expires, seg, off, len, ends]) next(bytesOf(col, count))
  const blob = next(Buffer.allocUnsafe(keyBytes))
  const tail = Buffer.alloc(4)
  if (io.readSync(fd, tail, 0, 4, at) !== 4 || tail.readUInt32LE(0) !== crc >>> 0) return undefined
  // Every key lies inside the blob, so no later slice can run off it.
  let prev = 0
  for (let i = 0; i < count; i++) {
    const e = ends[i]!
    if (e < prev || e > keyBytes) return undefined
    prev = e
  }
  return {
    maxVersion,
    segments,
    namespaces,
    count,
    version,
    expires,
    seg,
    off,
    len,
    ends,
    blob,
    bytes: size,
  }
}

/** Removes the checkpoint (it is not to be used), if there is one. */
export function removeCheckpoint(dir: string): void {
  const file = path.join(dir, CHECKPOINT_FILE)
  if (io.existsSync(file)) io.rmSync(file)
}

/**
 * Writes a checkpoint of `db`'s key directory. `atClose`: the database is closing and no
 * write or compaction runs; otherwise the walk runs in slices of half a millisecond while
 * requests are served, and gives up (resolving false) if a compaction starts or the
 * database closes meanwhile. Resolves true once the new checkpoint is durable and named.
 * Never rejects: a checkpoint is a shortcut, and failing to write one fails nothing else.
 */
export async function writeCheckpoint(db: DbCore, atClose: boolean): Promise<boolean> {
  // Namespaces whose new keys this checkpoint's walk may fold into a new base (fold.ts).
  const folds = new Map<Namespace, WalkedKeys | null>()
  try {
    const ok = await write(db, atClose, folds)
    if (ok) for (const [n, walked] of folds) if (walked) await fold(db, n, walked)
    return ok
  } finally {
    for (const n of folds.keys()) n.moved = null
  }
}

async function write(
  db: DbCore,
  atClose: boolean,
  folds: Map<Namespace, WalkedKeys | null>,
): Promise<boolean> {
  if (!CHECKPOINTS_WORK) return false
  const dir = db.dir
  const tmp = path.join(dir, `${CHECKPOINT_FILE}.tmp`)
  let fd = -1
  try {
    if (!atClose) {
      // Listings wait for a namespace's sorted list after open; so does the checkpoint.
      for (;;) {
        const building = [...db.keydir.byName.values()].find((n) => n.building)
        if (!building) break
        await building.building
        if (db.isClosed()) return false
      }
      if (db.isCompacting() || db.isClosed()) return false
    }
    const epoch = db.compactionEpoch
    const gaveUp = () => !atClose && (db.isClosed() || db.compactionEpoch !== epoch)

    // The position replay will start from: every group applied so far is in the index.
    const from = new Map<number, number>()
    for (const seg of db.segments.values()) from.set(seg.id, seg.durable)
    // Each namespace's keys in UTF-8 byte order, as of now.
    // A namespace whose sorted list is not in step is sorted here; the others are walked in
    // their own sorted list, in place (a copy of a million keys held the loop for tens of ms).
    const lists: { n: Namespace; sorted?: string[] }[] = []
    let total = 0
    for (const n of db.keydir.byName.values()) {
      const sorted = n.building || n.changes ? sortKeys([...n.map.keys()]).keys : undefined
      lists.push({ n, sorted })
      total += sorted?.length ?? n.map.size
      if (!atClose && wantsFold(n)) {
        n.moved = new Set()
        folds.set(n, null)
      }
    }

    // Each key's slot as it is when the walk meets it: a write made meanwhile is also in
    // the log after `from`, and replaying it gives the same result (FORMAT.md).
    const cols = new Columns(total)
    const counts: number[] = []
    const s = db.keydir.slots
    let start = performance.now()
    const paced = async (): Promise<boolean> => {
      if (performance.now() - start < SLICE_MS) return true
      await yieldToRequests(performance.now() - start)
      start = performance.now()
      return !gaveUp()
    }
    for (const { n, sorted } of lists) {
      const before = cols.n
      // A page at a time, each found again after the last key taken: keys that came and went
      // while the walk yielded are no matter, since keys added behind it are written after
      // `from` and come back by replay, and none that was there all along is passed over or
      // met twice.
      if (!(await walkKeys(n, sorted, cols, s, atClose ? null : paced))) return false
      counts.push(cols.n - before)
      if (folds.has(n)) folds.set(n, cols.walked(before, cols.n - before))
    }
    if (gaveUp()) return false

    // What the checkpoint covers, taken at the end: its entries point below these sizes.
    const segs = [...db.segments.values()].sort((a, b) => a.id - b.id)
    const rows = Buffer.alloc(segs.length * CKPT_SEGMENT)
    segs.forEach((seg, i) => {
      const p = i * CKPT_SEGMENT
      rows.writeUInt32LE(seg.id, p)
      rows.writeUInt32LE(from.get(seg.id) ?? SEG_HEADER, p + 4)
      rows.writeUInt32LE(seg.durable, p + 8)
      rows.writeDoubleLE(seg.baseVersion, p + 16)
      // Per-namespace minima are not kept: a segment an open takes from here counts as one
      // that may hold anything (Segment.minVersions).
      rows.writeDoubleLE(0, p + 24)
    })
    const maxVersion = db.appliedVersion
    const names = lists.map(({ n }) => Buffer.from(n.name, 'utf8'))
    let nsBytes = 0
    for (const name of names) nsBytes += NS_ROW + name.length
    const nsTable = Buffer.alloc(Math.ceil(nsBytes / 8) * 8)
    let p = 0
    lists.forEach(({ n }, i) => {
      nsTable.writeUInt32LE(n.id, p)
      nsTable.writeUInt32LE(counts[i]!, p + 4)
      nsTable.writeUInt32LE(names[i]!.length, p + 8)
      nsTable.writeDoubleLE(n.applied, p + 16)
      names[i]!.copy(nsTable, p + NS_ROW)
      p += NS_ROW + names[i]!.length
    })
    const header = Buffer.alloc(CKPT_HEADER)
    CKPT_MAGIC.copy(header, 0)
    header.writeUInt32LE(CKPT_VERSION, 8)
    header.writeUInt32LE(segs.length, 12)
    header.writeUInt32LE(lists.length, 16)
    header.writeUInt32LE(cols.n, 20)
    header.writeDoubleLE(maxVersion, 24)
    header.writeUInt32LE(cols.blobLen, 32)
    header.writeUInt32LE(nsTable.length, 36)
    const n = cols.n
    const view = (a: Float64Array | Uint32Array) =>
      Buffer.from(a.buffer, a.byteOffset, n * a.BYTES_PER_ELEMENT)
    const pieces = [
      header,
      rows,
      nsTable,
      view(cols.version),
      view(cols.expires),
      view(cols.seg),
      view(cols.off),
      view(cols.len),
      view(cols.ends),
      cols.blob.subarray(0, cols.blobLen),
    ]

    // The entries point at bytes that must survive a power failure before anything relies
    // on them: with durability `always` they were synced before they were applied.
    if (db.durability !== 'always' && !atClose) await db.log.syncDirty()
    if (gaveUp()) return false
    // Open replays only the log after the checkpoint, so the history windows must hold, on
    // disk, every version superseded before it (FORMAT.md, "History windows").
    await db.syncHistory()

    let c = 0
    fd = io.openSync(tmp, 'w')
    let at = 0
    for (const piece of pieces) {
      c = crc32(piece, c)
      await io.writeAll(fd, piece, 0, piece.length, at)
      at += piece.length
    }
    const tail = Buffer.alloc(4)
    tail.writeUInt32LE(c >>> 0, 0)
    await io.writeAll(fd, tail, 0, 4, at)
    await io.fsync(fd)
    io.closeSync(fd)
    fd = -1
    if (gaveUp()) {
      io.rmSync(tmp)
      return false
    }
    io.renameSync(tmp, path.join(dir, CHECKPOINT_FILE))
    await fsyncDirAsync(dir)
    db.noteCheckpoint(at + 4)
    return true
  } catch {
    // Best effort: a leftover temporary file is removed by the next open.
    if (fd >= 0) {
      try {
        io.closeSync(fd)
      } catch {}
    }
    try {
      io.rmSync(tmp)
    } catch {}
    return false
  }
}
