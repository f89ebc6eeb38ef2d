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

/** One entry's export line. */
export function entryLine(e: ExportedEntry): Buffer[] {
  let tail = `,"version":"${e.version}"`
  if (e.expiresAt !== undefined) tail += `,"expiresAt":${expirySeconds(e.expiresAt)}`
  const head = Buffer.from(`{"key":${JSON.stringify(e.key)},"value":`)
  if (e.metadata === undefined) return [head, e.value, Buffer.from(`${tail}}\n`)]
  return [head, e.value, Buffer.from(`${tail},"metadata":`), e.metadata, Buffer.from('}\n')]
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
        const parts: Buffer[] = []
        let size = 0
        for (const e of got) {
          // Each started 1,000 entries is a request, from the daily quota.
          if (entries === counted * PER_REQUEST) {
            if (perDay !== null && svc.usage.today(accountId, Date.now()).requests >= perDay) {
              // Past the quota: cut short, the end line missing.
              if (size > 0 && !out.closed) write(Buffer.concat(parts, size))
              return finish(false)
            }
            counted++
            svc.usage.record(accountId, OP.export, 200, 0, 0, Date.now())
          }
          for (const p of entryLine(e)) {
            parts.push(p)
            size += p.length
          }
          entries++
        }
        // Batches of about BATCH_BYTES, whatever the entries' sizes.
        batch = Math.max(1, Math.min(1000, Math.floor((BATCH_BYTES * got.length) / (size || 1))))
        const data = Buffer.concat(parts, size)
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
