// Compaction: copies every live record out of the sealed segments into fresh ones, then
// swaps them in and deletes the old files. It runs in slices of a few milliseconds so
// requests keep flowing; writes made meanwhile go to the active segment and win, because
// the swap only moves a key whose index entry still points at the copy it read.
//
// Every sealed segment is compacted together, so a tombstone or an expired record can be
// dropped: every older copy of its key is in the same set and goes with it. Crash safety:
// outputs are written under temporary names, fsynced, then renamed; only then does the
// COMPACTED file list the old segments, which are deleted (again on the next open if the
// process dies half-way). Before that file exists, old and new copies coexist and recovery
// keeps the highest version of each key, which is the same data.
import fs from 'node:fs'
import path from 'node:path'
import type { Db } from './db.js'
import { fsyncDir } from './fsutil.js'
import { HintBuilder, writeHint } from './hint.js'
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

const SLICE_MS = 5
const OUT_BUFFER = 1024 * 1024

interface Output {
  id: number
  tmp: string
  fd: number
  size: number
  hint: HintBuilder
  buf: Buffer
  len: number
  live: number
  baseVersion: number
}

/** One pass over all sealed segments. Resolves true when it replaced them. */
export async function compactAll(db: Db): Promise<boolean> {
  if (db.active.end > SEG_HEADER) db.rotate()
  await db.drain()
  const old = [...db.segments.values()].filter((s) => s !== db.active)
  if (old.length === 0) return false
  const oldIds = new Set(old.map((s) => s.id))
  const s = db.slots

  // What to copy: every key whose newest record lies in the old segments, in file order.
  const items: number[] = []
  const owners: Namespace[] = []
  const keys: string[] = []
  for (const n of db.byName.values()) {
    for (const [key, slot] of n.map) {
      if (oldIds.has(s.seg[slot])) {
        items.push(items.length)
        owners.push(n)
        keys.push(key)
      }
    }
  }
  const slotOf = (i: number) => owners[i].map.get(keys[i])!
  const fromSeg = new Uint32Array(items.length)
  const fromOff = new Uint32Array(items.length)
  for (let i = 0; i < items.length; i++) {
    const slot = slotOf(i)
    fromSeg[i] = s.seg[slot]
    fromOff[i] = s.off[slot]
  }
  items.sort((a, b) => fromSeg[a] - fromSeg[b] || fromOff[a] - fromOff[b])

  const outputs: Output[] = []
  const toSeg = new Uint32Array(items.length)
  const toOff = new Uint32Array(items.length)
  const copied = new Uint8Array(items.length)
  let out: Output | null = null
  const now = Date.now()
  let sliceStart = performance.now()
  try {
    for (const i of items) {
      const slot = owners[i].map.get(keys[i])
      if (slot === undefined || s.seg[slot] !== fromSeg[i] || s.off[slot] !== fromOff[i]) continue
      const exp = s.expires[slot]
      if (exp !== 0 && exp <= now) continue
      const len = s.len[slot]
      const entry = db.readEntry(fromSeg[i], fromOff[i], len, false)
      if (out && out.size + REC_HEADER + len > db.segmentBytes && out.size > SEG_HEADER) {
        finishOutput(out)
        out = null
      }
      if (!out) {
        out = startOutput(db)
        outputs.push(out)
      }
      if (out.len + REC_HEADER + len > out.buf.length) {
        writeOut(out)
        if (REC_HEADER + len > out.buf.length) out.buf = Buffer.allocUnsafe(REC_HEADER + len)
      }
      const at = out.len
      entry.copy(out.buf, at + REC_HEADER)
      sealRecord(out.buf, at, len, 1)
      out.len += REC_HEADER + len
      const off = out.size + REC_HEADER
      out.size += REC_HEADER + len
      const keyLen = entry.readUInt16LE(6)
      out.hint.add(
        PUT,
        entry[5],
        keyLen,
        entry.readUInt32LE(8),
        entry.readDoubleLE(12),
        entry.readDoubleLE(20),
        off,
        len,
        entry,
        ENTRY_HEADER,
      )
      toSeg[i] = out.id
      toOff[i] = off
      copied[i] = 1
      if (performance.now() - sliceStart > SLICE_MS) {
        await new Promise((r) => setImmediate(r))
        if (db.isClosed()) throw new Error('closed')
        sliceStart = performance.now()
      }
    }
    if (out) finishOutput(out)
    for (const o of outputs) {
      await new Promise<void>((resolve, reject) =>
        fs.fdatasync(o.fd, (e) => (e ? reject(e) : resolve())),
      )
    }
    for (const o of outputs) {
      writeHint(path.join(db.dir, hintFile(o.id)), o.hint.finish(o.id, o.size, o.baseVersion))
      fs.renameSync(o.tmp, path.join(db.dir, segmentFile(o.id)))
    }
    fsyncDir(db.dir)
  } catch (err) {
    for (const o of outputs) {
      fs.closeSync(o.fd)
      fs.rmSync(o.tmp, { force: true })
      fs.rmSync(path.join(db.dir, hintFile(o.id)), { force: true })
    }
    if (db.isClosed()) return false
    throw err
  }

  // The swap: synchronous, so no request sees it half done.
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
  for (const i of items) {
    const n = owners[i]
    const slot = n.map.get(keys[i])
    if (slot === undefined || s.seg[slot] !== fromSeg[i] || s.off[slot] !== fromOff[i]) continue
    if (!copied[i]) {
      n.map.has(keys[i]) && db.remove(n, keys[i]) // expired: its record is not carried over
      continue
    }
    const seg = byId.get(toSeg[i])!
    db.segments.get(fromSeg[i])!.live -= s.len[slot]
    s.seg[slot] = toSeg[i]
    s.off[slot] = toOff[i]
    seg.live += s.len[slot]
  }

  const marker = path.join(db.dir, COMPACTED_FILE)
  const fd = fs.openSync(marker, 'w')
  fs.writeSync(fd, JSON.stringify([...oldIds]))
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
  // Keep the active segment the newest one, where recovery looks for a torn tail.
  if (outputs.length > 0) db.rotate()
  return true
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
    live: 0,
    baseVersion,
  }
}

function writeOut(o: Output): void {
  let done = 0
  const base = o.size - o.len
  while (done < o.len) done += fs.writeSync(o.fd, o.buf, done, o.len - done, base + done)
  o.len = 0
}

function finishOutput(o: Output): void {
  writeOut(o)
}
