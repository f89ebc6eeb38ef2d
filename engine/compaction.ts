// Compaction: copies every live record out of the sealed segments into fresh ones, then
// points the index at the copies and deletes the old files. Requests keep flowing: files
// are read asynchronously, and the walk over records and the swap of index entries run in
// slices of a few milliseconds. Writes made meanwhile go to the active segment and win,
// because a key is moved only while its index entry still points at the copy that was read.
//
// Every sealed segment is compacted together, so a tombstone or an expired record can be
// dropped: every older copy of its key is in the same set and goes with it. Crash safety:
// outputs are written under temporary names, fsynced, then renamed; only once every key is
// moved does the COMPACTED file list the old segments, which are then deleted (again on the
// next open if the process dies half-way). Before that file exists, old and new copies
// coexist and recovery keeps the highest version of each key, which is the same data.
import fs from 'node:fs'
import path from 'node:path'
import type { Db } from './db.js'
import { fsyncDir } from './fsutil.js'
import { HintBuilder } from './hint.js'
import {
  COMPACTED_FILE,
  type Namespace,
  type Segment,
  compactTmpFile,
  hintFile,
  segmentFile,
} from './parts.js'
import {
  ENTRY_HEADER,
  PUT,
  REC_HEADER,
  SEG_COMPACTED,
  SEG_HEADER,
  sealRecord,
  segmentHeader,
} from './record.js'

const SLICE_MS = 4
const OUT_BUFFER = 1024 * 1024

interface Output {
  id: number
  tmp: string
  fd: number
  size: number
  hint: HintBuilder
  buf: Buffer
  len: number
  baseVersion: number
}

/** Index entries to move once the outputs are durable, in parallel arrays. */
class Moves {
  slot = new Uint32Array(1024)
  fromSeg = new Uint32Array(1024)
  fromOff = new Uint32Array(1024)
  toSeg = new Uint32Array(1024)
  toOff = new Uint32Array(1024)
  n = 0

  push(slot: number, fromSeg: number, fromOff: number, toSeg: number, toOff: number): void {
    if (this.n === this.slot.length) {
      for (const k of ['slot', 'fromSeg', 'fromOff', 'toSeg', 'toOff'] as const) {
        const b = new Uint32Array(this.n * 2)
        b.set(this[k])
        this[k] = b
      }
    }
    const i = this.n++
    this.slot[i] = slot
    this.fromSeg[i] = fromSeg
    this.fromOff[i] = fromOff
    this.toSeg[i] = toSeg
    this.toOff[i] = toOff
  }
}

/** Yields to the event loop once a slice has used its time; throws if the db closed meanwhile. */
function slicer(db: Db): () => Promise<void> {
  let start = performance.now()
  return async () => {
    if (performance.now() - start < SLICE_MS) return
    await new Promise((r) => setImmediate(r))
    if (db.isClosed()) throw new Error('closed')
    start = performance.now()
  }
}

/** One pass over all sealed segments. Resolves true when it replaced them. */
export async function compactAll(db: Db): Promise<boolean> {
  if (db.active.end > SEG_HEADER) db.rotate()
  await db.drain()
  const old = [...db.segments.values()].filter((s) => s !== db.active).sort((a, b) => a.id - b.id)
  if (old.length === 0) return false
  const s = db.slots
  const moves = new Moves()
  /** Keys found expired in the walk: not copied, dropped from the index after the swap. */
  const expired: [Namespace, string][] = []
  const outputs: Output[] = []
  let out: Output | null = null
  const tick = slicer(db)
  const now = Date.now()
  try {
    for (const seg of old) {
      const buf = await readSegment(seg)
      for (let p = SEG_HEADER; p + REC_HEADER <= buf.length; ) {
        const recLen = buf.readUInt32LE(p + 4)
        const count = buf.readUInt32LE(p + 8)
        let q = p + REC_HEADER
        for (let i = 0; i < count; i++) {
          const keyLen = buf.readUInt16LE(q + 6)
          const len = ENTRY_HEADER + keyLen + buf.readUInt32LE(q + 28)
          if (buf[q + 4] === PUT) {
            const off = q
            const n = db.byId.get(buf.readUInt32LE(q + 8))
            const key = buf.toString('utf8', q + ENTRY_HEADER, q + ENTRY_HEADER + keyLen)
            const slot = n?.map.get(key)
            const exp = slot === undefined ? 0 : s.expires[slot]!
            const current = slot !== undefined && s.seg[slot] === seg.id && s.off[slot] === off
            if (current && exp !== 0 && exp <= now) expired.push([n!, key])
            else if (current) {
              if (out && out.size + REC_HEADER + len > db.segmentBytes && out.size > SEG_HEADER) {
                writeOut(out)
                out = null
              }
              if (!out) {
                out = startOutput(db)
                outputs.push(out)
              }
              const at = appendEntry(out, buf, off, len)
              out.hint.add(
                PUT,
                buf[q + 5]!,
                keyLen,
                buf.readUInt32LE(q + 8),
                buf.readDoubleLE(q + 12),
                buf.readDoubleLE(q + 20),
                at,
                len,
                buf,
                q + ENTRY_HEADER,
              )
              moves.push(slot, seg.id, off, out.id, at)
            }
          }
          q += len
        }
        p += REC_HEADER + recLen
        await tick()
      }
    }
    if (out) writeOut(out)
    for (const o of outputs) {
      await new Promise<void>((resolve, reject) =>
        fs.fdatasync(o.fd, (e) => (e ? reject(e) : resolve())),
      )
      await fs.promises.writeFile(
        `${path.join(db.dir, hintFile(o.id))}.tmp`,
        o.hint.finish(o.id, o.size, o.baseVersion),
      )
      fs.renameSync(`${path.join(db.dir, hintFile(o.id))}.tmp`, path.join(db.dir, hintFile(o.id)))
      fs.renameSync(o.tmp, path.join(db.dir, segmentFile(o.id)))
    }
    fsyncDir(db.dir)
  } catch (err) {
    for (const o of outputs) {
      fs.closeSync(o.fd)
      fs.rmSync(o.tmp, { force: true })
      fs.rmSync(path.join(db.dir, hintFile(o.id)), { force: true })
      fs.rmSync(`${path.join(db.dir, hintFile(o.id))}.tmp`, { force: true })
      fs.rmSync(path.join(db.dir, segmentFile(o.id)), { force: true })
    }
    if (db.isClosed()) return false
    throw err
  }

  // The outputs are durable and named: make them readable, then move the index entries over,
  // a slice at a time. Until the COMPACTED file exists both copies stay on disk.
  const byId = new Map<number, Segment>()
  for (const o of outputs) {
    const seg: Segment = {
      id: o.id,
      file: path.join(db.dir, segmentFile(o.id)),
      fd: o.fd,
      written: o.size,
      end: o.size,
      live: 0,
      hint: null,
      sealed: true,
      unsynced: false,
      baseVersion: o.baseVersion,
    }
    db.segments.set(o.id, seg)
    byId.set(o.id, seg)
  }
  const swapTick = slicer(db)
  for (let i = 0; i < moves.n; i++) {
    const slot = moves.slot[i]!
    if (s.seg[slot] === moves.fromSeg[i] && s.off[slot] === moves.fromOff[i]) {
      db.segments.get(moves.fromSeg[i]!)!.live -= s.len[slot]!
      s.seg[slot] = moves.toSeg[i]!
      s.off[slot] = moves.toOff[i]!
      byId.get(moves.toSeg[i]!)!.live += s.len[slot]!
    }
    if ((i & 1023) === 0) {
      try {
        await swapTick()
      } catch {
        return false // closed: the next open resolves old and new copies
      }
    }
  }
  // Expired keys were not copied; unless written again meanwhile, their entries go now.
  const oldIds = new Set(old.map((o) => o.id))
  for (const [n, key] of expired) {
    const slot = n.map.get(key)
    if (slot !== undefined && oldIds.has(s.seg[slot]!)) db.remove(n, key)
  }

  const marker = path.join(db.dir, COMPACTED_FILE)
  const fd = fs.openSync(marker, 'w')
  fs.writeSync(fd, JSON.stringify(old.map((o) => o.id)))
  fs.fsyncSync(fd)
  fs.closeSync(fd)
  fsyncDir(db.dir)
  for (const seg of old) {
    db.segments.delete(seg.id)
    fs.closeSync(seg.fd)
    fs.rmSync(seg.file, { force: true })
    fs.rmSync(path.join(db.dir, hintFile(seg.id)), { force: true })
  }
  fsyncDir(db.dir)
  fs.rmSync(marker, { force: true })
  // Keep the active segment the newest one, so ids keep the order records were written in.
  if (outputs.length > 0) db.rotate()
  return true
}

function readSegment(seg: Segment): Promise<Buffer> {
  const buf = Buffer.allocUnsafe(seg.written)
  return new Promise((resolve, reject) => {
    let done = 0
    const next = () =>
      fs.read(seg.fd, buf, done, seg.written - done, done, (err, n) => {
        if (err) return reject(err)
        done += n
        if (n === 0 || done === seg.written) resolve(buf.subarray(0, done))
        else next()
      })
    next()
  })
}

function startOutput(db: Db): Output {
  const id = db.nextSegId++
  const tmp = path.join(db.dir, compactTmpFile(id))
  const fd = fs.openSync(tmp, 'w+')
  const baseVersion = db.version
  const header = segmentHeader(id, baseVersion, SEG_COMPACTED)
  fs.writeSync(fd, header, 0, header.length, 0)
  return {
    id,
    tmp,
    fd,
    size: SEG_HEADER,
    hint: new HintBuilder(),
    buf: Buffer.allocUnsafe(OUT_BUFFER),
    len: 0,
    baseVersion,
  }
}

/** Appends one entry as a record of its own; returns the entry's offset in the output. */
function appendEntry(o: Output, src: Buffer, off: number, len: number): number {
  if (o.len + REC_HEADER + len > o.buf.length) {
    writeOut(o)
    if (REC_HEADER + len > o.buf.length) o.buf = Buffer.allocUnsafe(REC_HEADER + len)
  }
  const at = o.len
  src.copy(o.buf, at + REC_HEADER, off, off + len)
  sealRecord(o.buf, at, len, 1)
  o.len += REC_HEADER + len
  const entryOff = o.size + REC_HEADER
  o.size += REC_HEADER + len
  return entryOff
}

function writeOut(o: Output): void {
  let done = 0
  const base = o.size - o.len
  while (done < o.len) done += fs.writeSync(o.fd, o.buf, done, o.len - done, base + done)
  o.len = 0
}
