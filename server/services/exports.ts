// A namespace's export as it streams (the contract's "Export and import"), whatever carries it
// (/v1 in v1/export.ts, the dashboard's download in dashboard/api-transfer.ts). NDJSON read
// from a snapshot of the range (Store.snapshot: every entry as it was at the header's version,
// whatever is written meanwhile), a batch at a time, and the next batch is read only once the
// client has taken the one before: a reader that stops holds one batch in the server's memory,
// not the namespace. One request (operation `export`) is counted for each started 1,000
// entries, taken from the daily quota as the stream goes: past the quota the stream ends
// without its end line, which is how a client knows a download was cut.
import type { Logger } from '../log.js'
import type { ExportedEntry, RangeSnapshot } from '../store/types.js'
import { expirySeconds } from '../wire/expiry.js'
import { OP, type Usage } from './usage.js'

/** Entries per counted request. */
const PER_REQUEST = 1000
/** About this many bytes of entries are read and sent at a time. */
const BATCH_BYTES = 1024 * 1024

/** What carries an export to its client (http/stream-out.ts's ResponseOut is one). */
export interface ExportSink {
  /** false when the client has not yet taken what was sent before. */
  write(data: string | Buffer): boolean
  /** Runs `fn` each time the client has taken some of what was waiting. */
  onWritable(fn: () => void): void
  end(): void
  readonly closed: boolean
}

export interface ExportStream {
  /** The client left: the snapshot is let go and the stream ends without its end line. */
  abort(): void
}

/** The file name a download of the namespace is offered under. */
export const exportFileName = (ns: string) => `${ns.replace(/[^A-Za-z0-9_-]/g, '')}.ndjson`

/**
 * Room for a line beyond its key's JSON text, value and metadata: `{"key":`, `,"value":`,
 * `,"version":"` with 16 digits, `,"expiresAt":` with 16, `,"metadata":`, and `}` and a newline.
 */
const LINE_ROOM = 100

const bytes = (s: string) => Uint8Array.from(s, (c) => c.charCodeAt(0))
const KEY = bytes('{"key":')
const VALUE = bytes(',"value":')
const VERSION = bytes(',"version":"')
const EXPIRES = bytes(',"expiresAt":')
const METADATA = bytes(',"metadata":')

/** Writes the ASCII bytes `b` at out[o]; returns the offset past them. */
function put(out: Buffer, o: number, b: Uint8Array): number {
  for (let i = 0; i < b.length; i++) out[o + i] = b[i]!
  return o + b.length
}

/** Writes the digits of the non-negative integer `n` at out[o]; returns the offset past them. */
function putInt(out: Buffer, o: number, n: number): number {
  let end = o
  for (let m = n; m >= 10; m = Math.floor(m / 10)) end++
  for (let at = end, m = n; at >= o; at--, m = Math.floor(m / 10)) out[at] = 48 + (m % 10)
  return end + 1
}

/**
 * Writes `key` as a JSON string at out[o], returns the offset past it. A key of printable ASCII
 * without a quote or backslash is its own JSON text, byte for byte (most keys): copied as it is.
 */
function putKey(out: Buffer, o: number, key: string): number {
  const n = key.length
  for (let i = 0; i < n; i++) {
    const c = key.charCodeAt(i)
    if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c)
      return o + out.write(JSON.stringify(key), o)
  }
  out[o] = 0x22
  for (let i = 0; i < n; i++) out[o + 1 + i] = key.charCodeAt(i)
  out[o + 1 + n] = 0x22
  return o + n + 2
}

/**
 * The export lines of the first `count` entries, as one buffer of UTF-8 text, written in place:
 * a buffer or two for each entry, and their concatenation, cost more than the rest of the
 * export together.
 */
export function exportLines(got: ExportedEntry[], count = got.length): Buffer {
  let size = 0
  // Six UTF-8 bytes at most for each UTF-16 unit of a key, escaped (\u001f).
  for (let i = 0; i < count; i++) {
    const e = got[i]!
    size += e.key.length * 6 + e.value.length + (e.metadata?.length ?? 0) + LINE_ROOM
  }
  const out = Buffer.allocUnsafe(size)
  let o = 0
  for (let i = 0; i < count; i++) {
    const e = got[i]!
    o = putKey(out, put(out, o, KEY), e.key)
    o = put(out, o, VALUE)
    e.value.copy(out, o)
    o += e.value.length
    o = putInt(out, put(out, o, VERSION), e.version)
    out[o++] = 0x22
    if (e.expiresAt !== undefined) o = putInt(out, put(out, o, EXPIRES), expirySeconds(e.expiresAt))
    if (e.metadata !== undefined) {
      o = put(out, o, METADATA)
      out.set(e.metadata, o)
      o += e.metadata.length
    }
    out[o++] = 0x7d
    out[o++] = 0x0a
  }
  return out.subarray(0, o)
}

/**
 * Streams `snap` to `out`, header line first. The caller has counted the export's first
 * request as the stream opened; `bytes` learns what was sent, once, when the stream ends.
 */
export function streamExport(
  svc: { usage: Usage; log: Logger },
  snap: RangeSnapshot,
  o: { ns: string; accountId: string; perDay: number | null },
  out: ExportSink,
  done: (bytes: number) => void,
): ExportStream {
  const { ns, accountId, perDay } = o
  let bytes = 0
  let entries = 0
  let counted = 1
  let finished = false
  /** A batch read while the client had not taken the one before. */
  let ready: Buffer | undefined
  let waiting = false
  let reading = false
  let ended = false
  let batch = 16
  const write = (data: string | Buffer) => {
    bytes += data.length
    return out.write(data)
  }
  const finish = (whole: boolean) => {
    if (finished) return
    finished = true
    snap.close()
    if (whole && !out.closed) write(`{"end":true,"entries":${entries}}\n`)
    svc.usage.record(accountId, OP.export, 200, 0, bytes, Date.now(), 0)
    done(bytes)
    out.end()
  }
  write(
    `{"cairn":"export","format":1,"namespace":${JSON.stringify(ns)},"version":"${snap.version}","exportedAt":"${new Date().toISOString()}"}\n`,
  )
  const send = (data: Buffer) => {
    if (data.length > 0 && !write(data)) waiting = true
    if (ended) return finish(true)
    // On the next turn: a chain of settled promises would otherwise run inside the cork uWS
    // holds for the request, where every write says it went and nothing reaches the socket.
    if (!waiting) setImmediate(read)
  }
  // Registered for the stream's life (cork-room.ts, watch-sse.ts): uWS moves what it held
  // back when something more is written, so the batch that waited goes now.
  out.onWritable(() => {
    if (finished || !waiting) return
    waiting = false
    const data = ready
    ready = undefined
    if (data !== undefined) send(data)
    else if (!reading) read()
  })
  const read = () => {
    if (reading || finished) return
    reading = true
    snap.next(batch).then(
      (got) => {
        reading = false
        if (finished) return
        if (got.length === 0) {
          ended = true
          if (!waiting) finish(true)
          else ready = Buffer.alloc(0)
          return
        }
        // Each started 1,000 entries is a request, from the daily quota: the entry at `at`
        // starts one.
        let take = got.length
        for (let at = counted * PER_REQUEST - entries; at < got.length; at += PER_REQUEST) {
          if (perDay !== null && svc.usage.today(accountId, Date.now()).requests >= perDay) {
            take = at
            break
          }
          counted++
          svc.usage.record(accountId, OP.export, 200, 0, 0, Date.now())
        }
        const data = exportLines(got, take)
        entries += take
        if (take < got.length) {
          // Past the quota: cut short, the end line missing.
          if (data.length > 0 && !out.closed) write(data)
          return finish(false)
        }
        // Batches of about BATCH_BYTES, whatever the entries' sizes.
        batch = Math.max(
          1,
          Math.min(1000, Math.floor((BATCH_BYTES * got.length) / (data.length || 1))),
        )
        if (waiting) ready = data
        else send(data)
      },
      (err) => {
        reading = false
        svc.log.warn(
          { ns, err: (err as Error)?.message, errCode: (err as { code?: string })?.code },
          'export cut short',
        )
        finish(false)
      },
    )
  }
  setImmediate(read)
  return { abort: () => finish(false) }
}
