// Compaction: copies every live record out of the sealed segments into fresh ones, then
// points the index at the copies and deletes the old files. Requests keep flowing: files
// are read asynchronously, and the walk over records and the swap of index entries run in
// slices of half a millisecond. Writes made meanwhile go to the active segment and win,
// because a key is moved only while its index entry still points at the copy that was read.
//
// Every sealed segment is compacted together, so a tombstone or an expired record can be
// dropped: every older copy of its key is in the same set and goes with it. Crash safety:
// outputs are written under temporary names, fsynced, then renamed; only once every key is
// moved does the COMPACTED file list the old segments, which are then deleted (again on the
// next open if the process dies half-way). Before that file exists, old and new copies
// coexist and recovery keeps the highest version of each key, which is the same data.
import path from 'node:path'
import type { DbCore } from './db-core.js'
import { EngineError } from './errors.js'
import { HistoryKeep } from './history-file.js'
import { IO_PIECE, fsyncDirAsync, io } from './io.js'
import { hintCrcOf } from './manifest.js'
import { HintBuilder, writeHintAsync } from './hint.js'
import {
  COMPACTED_FILE,
  type Namespace,
  type Segment,
  compactTmpFile,
  hintFile,
  mayHoldOlder,
  noteMin,
  segmentFile,
} from './parts.js'
import {
  DEL,
  ENTRY_HEADER,
  REC_HEADER,
  SEG_COMPACTED,
  SEG_HEADER,
  checkRecord,
  copyBytes,
  entryKey,
  entryKeyAt,
  entryKeyLen,
  entryLength,
  entryNsId,
  entryType,
  entryVersion,
  isCompactionOutput,
  recordBodyLength,
  recordCount,
  sealEntry,
  sealRecord,
  segmentHeader,
} from './record.js'
import { SHARE, SLICE_MS, yieldToRequests } from './yield.js'
import { grown } from './typed.js'

/** The most of a busy loop a pass takes, however much garbage there is. */
const MAX_SHARE = 0.25
const OUT_BUFFER = 1024 * 1024
const WINDOW = 4 * 1024 * 1024

interface Output {
  id: number
  tmp: string
  fd: number
  size: number
  hint: HintBuilder
  buf: Buffer
  len: number
  baseVersion: number
  /** The checksum its hint ends with, for the manifest. */
  hintCrc: number
  /** Lowest version per namespace id among its entries (Segment.minVersions). */
  minVersions: Map<number, number>
}

/** Index entries to move once the outputs are durable, in parallel arrays. */
class Moves {
  slot: Uint32Array
  fromSeg: Uint32Array
  fromOff: Uint32Array
  toSeg: Uint32Array
  toOff: Uint32Array
  n = 0

  constructor() {
    this.slot = this.fromSeg = this.fromOff = this.toSeg = this.toOff = new Uint32Array(0)
  }

  /** Empties the list and sizes it for `size` moves at once, rather than doubling on the way. */
  reset(size: number): void {
    this.n = 0
    if (this.slot.length >= size) return
    const n = Math.max(size, 64)
    this.slot = new Uint32Array(n)
    this.fromSeg = new Uint32Array(n)
    this.fromOff = new Uint32Array(n)
    this.toSeg = new Uint32Array(n)
    this.toOff = new Uint32Array(n)
  }

  /** Never past the size given to reset(): a slot moves at most once, and it was counted. */
  push(slot: number, fromSeg: number, fromOff: number, toSeg: number, toOff: number): void {
    const i = this.n++
    this.slot[i] = slot
    this.fromSeg[i] = fromSeg
    this.fromOff[i] = fromOff
    this.toSeg[i] = toSeg
    this.toOff[i] = toOff
  }
}

/**
 * Yields to the event loop once a slice has used its time, leaving a busy loop to requests
 * (yield.ts); throws if the db closed meanwhile.
 */
function slicer(db: DbCore, share: number): () => Promise<void> {
  let start = performance.now()
  return async () => {
    const used = performance.now() - start
    if (used < SLICE_MS) return
    await yieldToRequests(used, share)
    if (db.isClosed()) throw new Error('closed')
    stillOurs(db)
    start = performance.now()
  }
}

/** Slot numbers in a growable typed array: one list per old segment. */
class SlotList {
  items = new Uint32Array(256)
  n = 0
  push(slot: number): void {
    if (this.n === this.items.length) this.items = grown(this.items, this.n * 2)
    this.items[this.n++] = slot
  }
}

/**
 * The slots whose records sit in the old segments, grouped by segment. Walking the index
 * rather than the log finds the live entries without making a key string or a map lookup
 * per record, so a pass over a large database leaves little garbage for requests to pay
 * for in GC pauses.
 */
async function liveSlotsBySegment(
  db: DbCore,
  old: Segment[],
  tick: () => Promise<void>,
): Promise<SlotList[]> {
  const s = db.keydir.slots
  let maxId = 0
  for (const seg of old) maxId = Math.max(maxId, seg.id)
  const which = new Int32Array(maxId + 1).fill(-1)
  old.forEach((seg, i) => {
    which[seg.id] = i
  })
  const lists = old.map(() => new SlotList())
  // Slots handed out during a yield hold records in the active segment, never an old one.
  const end = s.highWater
  for (let slot = 0; slot < end; slot++) {
    const id = s.seg[slot]!
    if (id <= maxId && which[id]! >= 0) lists[which[id]!]!.push(slot)
    if ((slot & 8191) === 0) await tick()
  }
  return lists
}

/**
 * Buffers a pass needs, kept from one pass to the next while compactions keep coming:
 * allocated afresh each time (tens of MB outside the JS heap), they make V8 run full
 * collections whose pauses requests feel. Dropped after a quiet minute.
 */
interface Scratch {
  at: Uint32Array
  reader: WindowReader
  moves: Moves
  hints: Buffer[]
  outs: Buffer[]
  timer: NodeJS.Timeout | null
}
const scratches = new WeakMap<DbCore, Scratch>()
const KEEP_SCRATCH_MS = 60_000
const POOLED = 8

function scratchFor(db: DbCore): Scratch {
  let sc = scratches.get(db)
  if (!sc) {
    sc = {
      at: new Uint32Array(0),
      reader: new WindowReader(),
      moves: new Moves(),
      hints: [],
      outs: [],
      timer: null,
    }
    scratches.set(db, sc)
  }
  if (sc.timer) clearTimeout(sc.timer)
  sc.timer = null
  return sc
}

/**
 * One pass over the sealed segments (all of them when `full`). Resolves to the bytes it
 * freed: 0 when it chose nothing, or was cut short by close.
 */
export async function compactAll(db: DbCore, full = true): Promise<number> {
  const sc = scratchFor(db)
  try {
    return await pass(db, sc, full)
  } finally {
    if (db.isClosed()) scratches.delete(db)
    else {
      // A WeakRef, so the timer does not keep a closed database's index alive.
      const ref = new WeakRef(db)
      sc.timer = setTimeout(() => {
        const d = ref.deref()
        if (d) scratches.delete(d)
      }, KEEP_SCRATCH_MS)
      sc.timer.unref()
    }
  }
}

/** Marks, in the offset map, an entry found expired during the walk. */
const EXPIRED = 0xffffffff

/**
 * The sealed segments a pass rewrites. A full pass takes them all. Otherwise, as Bitcask
 * merges do, the ones with most garbage first: every segment at least half dead (rewriting
 * it copies no more than it frees), then more of the deadest while dead bytes are still over
 * 15% of the disk. Passes start when a fifth of the disk is dead, so space stays under 1.5x
 * the live bytes even with the garbage written while a pass runs. A pass over data that
 * is 10% dead and evenly spread rewrites nothing.
 */
export function chooseSegments(sealed: Segment[], full: boolean): Segment[] {
  if (full) return sealed
  const body = (s: Segment) => Math.max(0, s.end - SEG_HEADER)
  const dead = (s: Segment) => Math.max(0, body(s) - s.live)
  const ratio = (s: Segment) => (body(s) === 0 ? 1 : dead(s) / body(s))
  let disk = 0
  let garbage = 0
  for (const s of sealed) {
    disk += body(s)
    garbage += dead(s)
  }
  const chosen: Segment[] = []
  for (const s of [...sealed].sort((a, b) => ratio(b) - ratio(a))) {
    if (ratio(s) < 0.5 && garbage <= disk * 0.15) break
    if (dead(s) === 0 && body(s) > 0) break
    chosen.push(s)
    garbage -= dead(s)
    disk -= dead(s)
  }
  return chosen.sort((a, b) => a.id - b.id)
}

async function pass(db: DbCore, sc: Scratch, full: boolean): Promise<number> {
  if (db.active.end > SEG_HEADER) db.rotate()
  await db.drain()
  // A segment whose hint is still being written is not taken: its seal would name it in the
  // manifest after the pass had removed it.
  await db.log.sealsSettled()
  // Nor is one still taking writes: the write path may have moved to a new segment while
  // this one's last groups are in flight, and an entry applied after the walk found the
  // live ones would be left behind. Nor one whose seal has yet to finish (its hint failed,
  // or its cut after a failed write is pending): a retry could seal it, and name it in the
  // manifest, after the pass had removed it.
  const others = [...db.segments.values()].filter((s) => s !== db.active)
  const sealed = others
    .filter((s) => s.durable === s.end && s.hint === null)
    .sort((a, b) => a.id - b.id)
  const old = chooseSegments(sealed, full)
  if (old.length === 0) return 0
  // The recent changes among what the pass rewrites, kept in history files (history-file.ts).
  // One the disk cannot read fails the pass, as a damaged record does: going on would lose
  // what it holds, or the recent changes of the segments this pass deletes.
  const keep = new HistoryKeep(db, () => stillOurs(db))
  await keep.load()
  // A tombstone (or an expired put, which acts as one) may be dropped only when no segment
  // left out of this pass can hold an older copy of its key (FORMAT.md, "Compaction").
  // Versions count per namespace, so the question is asked of the tombstone's namespace.
  const chosenIds = new Set(old.map((o) => o.id))
  const left = others.filter((seg) => !chosenIds.has(seg.id))
  const mayShadow = (nsId: number, version: number) => {
    for (const seg of left) if (mayHoldOlder(seg, nsId, version)) return true
    return false
  }
  const s = db.keydir.slots
  const moves = sc.moves
  // Requests first, but not at any cost in space: the more of the log is dead, the more of a
  // busy loop a pass that started by itself takes (a fifth at the 20% that starts one, at
  // most a quarter). A full pass is an operator's maintenance and keeps to the base share.
  const { diskBytes, deadBytes } = db.stats()
  const share = full
    ? SHARE
    : Math.min(MAX_SHARE, Math.max(SHARE, deadBytes / Math.max(1, diskBytes)))
  /** Keys found expired in the walk: not copied, dropped from the index after the swap. */
  const expired: [Namespace, string][] = []
  const outputs: Output[] = []
  let out: Output | null = null
  const tick = slicer(db, share)
  const now = db.now()
  /** Makes room for `bytes` more in the current output, starting a new one when it is full. */
  const room = (bytes: number): Output => {
    if (out && out.size + bytes > db.segmentBytes && out.size > SEG_HEADER) {
      writeOut(out)
      out = null
    }
    if (!out) {
      out = startOutput(db, sc)
      outputs.push(out)
    }
    return out
  }
  try {
    const lists = await liveSlotsBySegment(db, old, tick)
    moves.reset(lists.reduce((sum, l) => sum + l.n, 0))
    // Entries are at least ENTRY_HEADER (32) bytes apart, so offset / 32 tells them apart:
    // `at` maps it to the slot (plus one) whose entry starts there.
    let most = 0
    for (const seg of old) most = Math.max(most, seg.written)
    if (sc.at.length < (most >>> 5) + 1) sc.at = new Uint32Array((most >>> 5) + 1)
    const at = sc.at
    const r = sc.reader
    for (let si = 0; si < old.length; si++) {
      const seg = old[si]!
      const list = lists[si]!
      // Compaction output holds copies among older data, not a record of what happened: its
      // recent changes went to history files when it was made.
      const history = !(await madeByCompaction(seg))
      // A segment with nothing live may still hold tombstones a segment left out needs, or
      // recent changes.
      if (list.n === 0 && left.length === 0 && !history) continue
      r.start(seg)
      at.fill(0, 0, (seg.written >>> 5) + 1)
      for (let i = 0; i < list.n; i++) {
        const slot = list.items[i]!
        if (s.seg[slot] === seg.id) at[s.off[slot]! >>> 5] = slot + 1
        // Scattered writes: a few thousand cost a millisecond.
        if ((i & 4095) === 4095) await tick()
      }
      // Walk the records in file order, a window of the file at a time. A record whose
      // entries are all live is copied whole; of any other, only its live entries.
      // Offsets p and q are in the file; the window holds the file from r.base on.
      let entries = 0
      for (let p = SEG_HEADER; p + REC_HEADER <= seg.written; ) {
        // A call per record would make a promise per record: check the clock every few
        // hundred entries (a transaction's record holds many).
        if (entries >= 256) {
          entries = 0
          await tick()
          if (keep.full) await keep.spill()
        }
        if (!r.has(p, REC_HEADER)) await r.load(p, REC_HEADER)
        const recEnd = p + REC_HEADER + recordBodyLength(r.buf, p - r.base)
        const fits = recEnd <= seg.written
        if (fits && !r.has(p, recEnd - p)) await r.load(p, recEnd - p)
        const buf = r.buf
        const b = r.base
        // Damage is never copied forward: the pass stops, names it, and waits for repair.
        if (!fits || checkRecord(buf, p - b, recEnd - b) <= 0) {
          db.damaged = new EngineError(
            'CORRUPT',
            `${path.basename(seg.file)}: damaged record at offset ${p}, met by compaction; run \`cairn repair --data ${db.dir}\``,
          )
          db.noteCorrupt()
          throw db.damaged
        }
        const count = recordCount(buf, p - b)
        entries += count + 1
        if (history) keep.takeRecord(buf, p - b, count)
        let live = 0
        for (let i = 0, q = p + REC_HEADER; i < count; i++) {
          const len = entryLength(buf, q - b)
          const slot = at[q >>> 5]! - 1
          // Unmarked, or written again, deleted or moved during a yield: not copied.
          if (slot >= 0 && s.seg[slot] === seg.id && s.off[slot] === q && s.len[slot] === len) {
            const exp = s.expires[slot]!
            if (exp !== 0 && exp <= now) {
              const n = db.keydir.byId.get(entryNsId(buf, q - b))
              if (n) expired.push([n, entryKey(buf, q - b)])
              at[q >>> 5] = EXPIRED
            } else live++
          } else at[q >>> 5] = 0
          q += len
        }
        if (live === count) {
          const o = room(recEnd - p)
          const moved = appendRaw(o, buf, p - b, recEnd - b) - p
          for (let i = 0, q = p + REC_HEADER; i < count; i++) {
            const slot = at[q >>> 5]! - 1
            const len = s.len[slot]!
            addCopied(o, buf, q - b, moved + q, slot, seg.id, q, moves)
            q += len
          }
        } else if (live > 0 || left.length > 0) {
          for (let i = 0, q = p + REC_HEADER; i < count; i++) {
            const keyLen = entryKeyLen(buf, q - b)
            const len = entryLength(buf, q - b)
            const mark = at[q >>> 5]!
            if (mark === EXPIRED) {
              if (mayShadow(entryNsId(buf, q - b), entryVersion(buf, q - b)))
                appendTombstone(room, buf, q - b, keyLen)
            } else if (mark > 0) {
              const o = room(REC_HEADER + len)
              const to = appendEntry(o, buf, q - b, len)
              addCopied(o, buf, q - b, to, mark - 1, seg.id, q, moves)
            } else if (entryType(buf, q - b) === DEL && keepTombstone(db, buf, q - b, mayShadow)) {
              const o = room(REC_HEADER + len)
              noteEntry(o, buf, q - b, appendEntry(o, buf, q - b, len))
            }
            q += len
          }
        }
        p = recEnd
      }
    }
    if (out) writeOut(out)
    for (const o of outputs) {
      await io.fdatasync(o.fd)
      const hint = o.hint.finish(o.id, o.size, o.baseVersion)
      o.hintCrc = hintCrcOf(hint)
      await writeHintAsync(path.join(db.dir, hintFile(o.id)), hint)
      stillOurs(db)
      io.renameSync(o.tmp, path.join(db.dir, segmentFile(o.id)))
    }
    // Before any segment can go. A disk that refuses it costs watches their history (they
    // list again, as after any gap), not the pass: compaction is what frees space.
    await keep.write()
    // What the windows kept of the segments this pass deletes must be on disk before they go.
    await db.syncHistory()
    await fsyncDirAsync(db.dir)
    for (const o of outputs) {
      if (sc.hints.length < POOLED) sc.hints.push(o.hint.buf)
      if (sc.outs.length < POOLED) sc.outs.push(o.buf)
    }
  } catch (err) {
    for (const o of outputs) {
      // Best effort: on a failing disk what is left is removed by the next open.
      for (const f of [o.tmp, hintFile(o.id), `${hintFile(o.id)}.tmp`, segmentFile(o.id)]) {
        try {
          io.rmSync(path.resolve(db.dir, f))
        } catch {}
      }
      try {
        io.closeSync(o.fd)
      } catch {}
    }
    if (db.isClosed()) return 0
    throw err
  }
  if (db.isClosed()) return 0 // the outputs stay: the next open resolves both copies

  // The outputs are durable and named: make them readable, then move the index entries over,
  // a slice at a time. Until the COMPACTED file exists both copies stay on disk.
  const byId = new Map<number, Segment>()
  for (const o of outputs) {
    const seg: Segment = {
      id: o.id,
      file: path.join(db.dir, segmentFile(o.id)),
      fd: o.fd,
      written: o.size,
      durable: o.size,
      end: o.size,
      live: 0,
      hint: null,
      sealed: true,
      unsynced: false,
      baseVersion: o.baseVersion,
      minVersions: o.minVersions,
    }
    db.segments.set(o.id, seg)
    byId.set(o.id, seg)
  }
  const swapTick = slicer(db, share)
  for (let i = 0; i < moves.n; i++) {
    db.keydir.relocate(
      moves.slot[i]!,
      moves.fromSeg[i]!,
      moves.fromOff[i]!,
      byId.get(moves.toSeg[i]!)!,
      moves.toOff[i]!,
    )
    if ((i & 1023) === 0) {
      try {
        await swapTick()
      } catch {
        return 0 // closed: the next open resolves old and new copies
      }
    }
  }
  // Expired keys were not copied; unless written again meanwhile, their entries go now.
  const oldIds = new Set(old.map((o) => o.id))
  for (const [n, key] of expired) {
    const slot = n.map.get(key)
    if (slot !== undefined && oldIds.has(s.seg[slot]!)) {
      db.keydir.remove(n, key)
      db.keydir.onExpired(n, key)
    }
  }

  // Nothing may point at the old segments any more; should anything still, they stay.
  const check = slicer(db, share)
  for (let slot = 0, end = s.highWater; slot < end; slot++) {
    if (oldIds.has(s.seg[slot]!)) throw new Error(`compaction left slot ${slot} behind`)
    if ((slot & 8191) === 0) {
      try {
        await check()
      } catch {
        return 0
      }
    }
  }
  // The manifest names the outputs instead of the old segments before any of those goes.
  const was = old.map((seg) => db.log.sealed.get(seg.id))
  for (const seg of old) {
    db.log.sealed.delete(seg.id)
    db.log.removed.add(seg.id)
  }
  for (const o of outputs) db.log.sealed.set(o.id, { id: o.id, size: o.size, hintCrc: o.hintCrc })
  try {
    await db.log.writeManifest()
  } catch (err) {
    // Undone one by one: segments sealed during the write stay listed.
    for (const seg of old) db.log.removed.delete(seg.id)
    for (const o of outputs) db.log.sealed.delete(o.id)
    old.forEach((seg, i) => {
      if (was[i]) db.log.sealed.set(seg.id, was[i]!)
    })
    throw err
  }
  // Counted here, where the pass takes effect: the old files' deletion below may still be
  // under way when someone reads the stats and sees the directory already shrunk.
  db.noteCompacted(outputs.reduce((n, o) => n + o.size, 0))
  // Bodies only: an empty segment (a header and nothing else) frees nothing worth a pass.
  const body = (size: number) => Math.max(0, size - SEG_HEADER)
  const freed = Math.max(
    0,
    old.reduce((n, seg) => n + body(seg.end), 0) - outputs.reduce((n, o) => n + body(o.size), 0),
  )
  // The marker goes first: should anything below fail, the old files are still named for
  // deletion by the next open, and stay in `segments` until then, where a later pass sees
  // them before it drops a tombstone an old copy there would need.
  const marker = path.join(db.dir, COMPACTED_FILE)
  stillOurs(db)
  io.writeFileAtomicSync(marker, Buffer.from(JSON.stringify(old.map((o) => o.id))))
  // Nothing points at the old segments any more: close them now, so a close() meanwhile
  // cannot meet them, and delete their files off the event loop (a large unlink takes a
  // while). Past this point a crash or close leaves only work the next open finishes.
  for (const seg of old) {
    db.segments.delete(seg.id)
    io.closeSync(seg.fd)
  }
  // Keep the active segment the newest one, so ids keep the order records were written in.
  if (outputs.length > 0) db.rotate()
  // The pass has taken effect: a disk that refuses what is left (deleting the old files) is
  // not a failed compaction, since the next open finishes that work (COMPACTED).
  try {
    await fsyncDirAsync(db.dir)
    for (const seg of old) {
      if (db.isClosed()) return freed
      await io.rm(seg.file)
      await io.rm(path.join(db.dir, hintFile(seg.id)))
    }
    if (db.isClosed()) return freed
    await fsyncDirAsync(db.dir)
    // Gone for good: the next manifest need not name them.
    for (const seg of old) db.log.removed.delete(seg.id)
    if (!db.isClosed()) await io.rm(marker)
  } catch {
    // Left for the next open, as after a crash here.
  }
  return freed
}

/**
 * Whether a tombstone must be carried into the output: its namespace still exists, its key
 * was not written again since, and a segment left out of the pass may hold an older copy.
 */
function keepTombstone(
  db: DbCore,
  buf: Buffer,
  q: number,
  mayShadow: (nsId: number, version: number) => boolean,
): boolean {
  const version = entryVersion(buf, q)
  const nsId = entryNsId(buf, q)
  if (!mayShadow(nsId, version)) return false
  const n = db.keydir.byId.get(nsId)
  if (!n) return false
  const slot = n.map.get(entryKey(buf, q))
  return slot === undefined || db.keydir.slots.version[slot]! < version
}

/** Whether a segment is compaction output (record.ts, isCompactionOutput). */
async function madeByCompaction(seg: Segment): Promise<boolean> {
  const head = Buffer.alloc(SEG_HEADER)
  const got = await io.read(seg.fd, head, 0, SEG_HEADER, 0)
  return isCompactionOutput(head.subarray(0, got))
}

/** Writes a tombstone, at the expired put's version, in place of an expired put. */
function appendTombstone(
  room: (bytes: number) => Output,
  buf: Buffer,
  q: number,
  keyLen: number,
): void {
  const len = ENTRY_HEADER + keyLen
  const o = room(REC_HEADER + len)
  const at = reserve(o, REC_HEADER + len)
  copyBytes(buf, entryKeyAt(q), q + len, o.buf, entryKeyAt(at + REC_HEADER))
  const version = entryVersion(buf, q)
  sealEntry(o.buf, at + REC_HEADER, DEL, 0, keyLen, entryNsId(buf, q), version, 0, 0)
  sealRecord(o.buf, at, len, 1)
  noteEntry(o, o.buf, at + REC_HEADER, o.size - len)
}

/** Adds the entry now at `at` in `o` (its bytes as in buf at q) to the output's hint. */
function noteEntry(o: Output, buf: Buffer, q: number, at: number): void {
  noteMin(o.minVersions, entryNsId(buf, q), entryVersion(buf, q))
  o.hint.add(buf, q, at)
}

/** Notes an entry copied into `o` at `at`: its hint, and the index move to make later. */
function addCopied(
  o: Output,
  buf: Buffer,
  q: number,
  at: number,
  slot: number,
  fromSeg: number,
  fromOff: number,
  moves: Moves,
): void {
  noteEntry(o, buf, q, at)
  moves.push(slot, fromSeg, fromOff, o.id, at)
}

/**
 * A segment read a window at a time into one buffer, reused across segments, so a pass
 * does not allocate a segment's size in memory for each segment (which, outside the JS
 * heap, still makes V8 collect garbage sooner).
 */
class WindowReader {
  buf = Buffer.allocUnsafe(WINDOW)
  /** File offset of buf[0], and how many bytes of buf hold file data. */
  base = 0
  len = 0
  private seg: Segment | null = null

  start(seg: Segment): void {
    this.seg = seg
    this.base = 0
    this.len = 0
  }

  has(off: number, n: number): boolean {
    return off >= this.base && off + n <= this.base + this.len
  }

  /** Reads the file from `off` on, at least `n` bytes (the segment must hold them). */
  async load(off: number, n: number): Promise<void> {
    const seg = this.seg!
    if (n > this.buf.length) this.buf = Buffer.allocUnsafe(n)
    const want = Math.min(this.buf.length, seg.written - off)
    let done = 0
    while (done < want) {
      const got = await io.read(seg.fd, this.buf, done, Math.min(want - done, IO_PIECE), off + done)
      if (got === 0) break
      done += got
    }
    if (done < n) throw new Error(`${path.basename(seg.file)}: short read at ${off}`)
    this.base = off
    this.len = done
  }
}

/** Throws once another process holds the directory (lock.ts): its files are not ours to touch. */
function stillOurs(db: DbCore): void {
  if (db.log.lockLost !== undefined) throw new EngineError('IO_ERROR', db.log.lockLost)
}

function startOutput(db: DbCore, sc: Scratch): Output {
  stillOurs(db)
  const id = db.log.nextSegId++
  const tmp = path.join(db.dir, compactTmpFile(id))
  const fd = io.openSync(tmp, 'w+')
  const baseVersion = db.version
  const header = segmentHeader(id, baseVersion, SEG_COMPACTED)
  io.writeAllSync(fd, header, 0, header.length, 0)
  return {
    id,
    tmp,
    fd,
    size: SEG_HEADER,
    hint: new HintBuilder(sc.hints.pop()),
    buf: sc.outs.pop() ?? Buffer.allocUnsafe(OUT_BUFFER),
    len: 0,
    baseVersion,
    hintCrc: 0,
    minVersions: new Map(),
  }
}

/** Makes room for `bytes` in the output's buffer; returns where they go in it. */
function reserve(o: Output, bytes: number): number {
  if (o.len + bytes > o.buf.length) {
    writeOut(o)
    if (bytes > o.buf.length) o.buf = Buffer.allocUnsafe(bytes)
  }
  const at = o.len
  o.len += bytes
  o.size += bytes
  return at
}

/** Appends one entry as a record of its own; returns the entry's offset in the output. */
function appendEntry(o: Output, src: Buffer, off: number, len: number): number {
  const at = reserve(o, REC_HEADER + len)
  copyBytes(src, off, off + len, o.buf, at + REC_HEADER)
  sealRecord(o.buf, at, len, 1)
  return o.size - len
}

/** Appends src[from, to), whole records, as they are; returns their offset in the output. */
function appendRaw(o: Output, src: Buffer, from: number, to: number): number {
  const at = reserve(o, to - from)
  copyBytes(src, from, to, o.buf, at)
  return o.size - (to - from)
}

function writeOut(o: Output): void {
  const base = o.size - o.len
  io.writeAllSync(o.fd, o.buf, 0, o.len, base)
  o.len = 0
}
