// The files that keep a namespace's history for its window of time (FORMAT.md, "History
// windows"): WINDOWS, the namespaces that keep one and their bounds, and one window file per
// such namespace, which holds every version its writes superseded, with the time of each of
// its commits. The log is left as it was: a window file is written beside it, and compaction
// reclaims the log as before.
import path from 'node:path'
import { crc32 } from 'node:zlib'
import { EngineError } from './errors.js'
import { fsyncDir, io } from './io.js'
import { ENTRY_HEADER, checkEntry, crc } from './record.js'

export const WINDOWS_FILE = 'WINDOWS'
const pad = (id: number) => String(id).padStart(8, '0')
export const windowFile = (nsId: number) => `window-${pad(nsId)}.win`
export const WINDOW_NAME = /^window-(\d{8,})\.win$/

/** magic(8) format(u32) crc(u32) floorVersion(f64) floorAt(f64) */
export const WIN_HEADER = 32
/** crc(u32, of bytes 4..32) len(u32) version(f64) at(f64) count(u32) reserved(u32) */
export const WREC_HEADER = 32
const MAGIC = Buffer.from('CAIRNWIN')
const FORMAT = 1

/** A namespace's window: how long history is kept, and at most how many bytes of it. */
export interface WindowSetting {
  seconds: number
  bytes: number
}

/** The settings WINDOWS holds, by namespace id; none when there is no file. */
export function readWindows(dir: string): Map<number, WindowSetting> {
  const file = path.join(dir, WINDOWS_FILE)
  if (!io.existsSync(file)) return new Map()
  const text = io.readFileSync(file).toString('utf8')
  const nl = text.indexOf('\n')
  const body = nl < 0 ? '' : text.slice(nl + 1)
  if (nl < 0 || Number(text.slice(0, nl)) !== crc32(Buffer.from(body))) {
    throw new EngineError(
      'CORRUPT',
      `${WINDOWS_FILE}: checksum mismatch at offset 0; delete it to open without history windows (set them again with setHistory)`,
    )
  }
  const list = (JSON.parse(body) as { list: [number, number, number][] }).list
  return new Map(list.map(([id, seconds, bytes]) => [id, { seconds, bytes }]))
}

/** Rewrites WINDOWS whole: temporary file, fsync, rename, fsync of the directory. */
export function writeWindows(dir: string, windows: Map<number, WindowSetting>): void {
  const list = [...windows].map(([id, w]) => [id, w.seconds, w.bytes])
  const body = JSON.stringify({ list })
  io.writeFileAtomicSync(
    path.join(dir, WINDOWS_FILE),
    Buffer.from(`${crc32(Buffer.from(body))}\n${body}`),
  )
  fsyncDir(dir)
}

/** A window file's header: the oldest point its records can answer for. */
export function windowHeader(floorVersion: number, floorAt: number): Buffer {
  const b = Buffer.alloc(WIN_HEADER)
  MAGIC.copy(b, 0)
  b.writeUInt32LE(FORMAT, 8)
  b.writeDoubleLE(floorVersion, 16)
  b.writeDoubleLE(floorAt, 24)
  b.writeUInt32LE(crc(b, 16, 32), 12)
  return b
}

/** One commit's record: its version and time, and the entries it superseded or deleted. */
export function windowRecord(version: number, at: number, entries: Buffer[]): Buffer {
  let len = WREC_HEADER
  for (const e of entries) len += e.length
  const b = Buffer.allocUnsafe(len)
  let p = WREC_HEADER
  for (const e of entries) p += e.copy(b, p)
  sealWindowRecord(b, len, version, at, entries.length)
  return b
}

/**
 * Fills in a record's header over its entries, already at b[32, len): the checksum covers the
 * header alone, as each entry carries its own.
 */
export function sealWindowRecord(
  b: Buffer,
  len: number,
  version: number,
  at: number,
  count: number,
): void {
  b.writeUInt32LE(len, 4)
  b.writeDoubleLE(version, 8)
  b.writeDoubleLE(at, 16)
  b.writeUInt32LE(count, 24)
  b.writeUInt32LE(0, 28)
  b.writeUInt32LE(crc(b, 4, WREC_HEADER), 0)
}

/** A record as found in a window file: where it is, and where each of its entries is. */
export interface FoundRecord {
  off: number
  len: number
  version: number
  at: number
  /** Offsets of its entries in the file. */
  entries: number[]
}

/** What a window file holds: its floor, its intact records, and where they end. */
export interface FoundWindow {
  floorVersion: number
  floorAt: number
  records: FoundRecord[]
  /** The end of the last intact record: a torn append after it is cut off. */
  end: number
}

/**
 * Reads a window file's header and records, stopping at the first that does not check out
 * (what a crash cut short). undefined when there is no file or its header is damaged.
 */
export function scanWindow(buf: Buffer): FoundWindow | undefined {
  if (buf.length < WIN_HEADER || !buf.subarray(0, 8).equals(MAGIC)) return undefined
  if (buf.readUInt32LE(8) !== FORMAT || buf.readUInt32LE(12) !== crc(buf, 16, 32)) return undefined
  const out: FoundWindow = {
    floorVersion: buf.readDoubleLE(16),
    floorAt: buf.readDoubleLE(24),
    records: [],
    end: WIN_HEADER,
  }
  let p = WIN_HEADER
  while (p + WREC_HEADER <= buf.length) {
    const len = buf.readUInt32LE(p + 4)
    if (
      len < WREC_HEADER ||
      p + len > buf.length ||
      buf.readUInt32LE(p) !== crc(buf, p + 4, p + WREC_HEADER)
    )
      break
    const count = buf.readUInt32LE(p + 24)
    const entries: number[] = []
    let q = p + WREC_HEADER
    for (let i = 0; i < count && q < p + len; i++) {
      const n = checkEntry(buf, q, p + len)
      if (n < ENTRY_HEADER) break
      entries.push(q)
      q += n
    }
    if (entries.length !== count || q !== p + len) break
    out.records.push({
      off: p,
      len,
      version: buf.readDoubleLE(p + 8),
      at: buf.readDoubleLE(p + 16),
      entries,
    })
    p += len
  }
  out.end = p
  return out
}
