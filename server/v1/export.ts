// GET /v1/{namespace}?count=1 and ?export=1 (with a prefix or a range). An export streams
// NDJSON read from a snapshot of the range (Store.snapshot: every entry as it was at the
// header's version, whatever is written meanwhile), a batch at a time, and reads the next
// batch only once the client has taken the one before: a reader that stops holds one batch
// in the server's memory, not the namespace. One request (operation `export`) is counted for
// each started 1,000 entries, taken from the daily quota as the stream goes: past the quota
// the stream ends without its end line, which is how a client knows a download was cut.
import { responseOut } from '../http/stream-out.js'
import { OP } from '../services/usage.js'
import type { ExportedEntry, RangeSnapshot } from '../store/types.js'
import { expirySeconds } from '../wire/expiry.js'
import type { KeyRange } from '../wire/range.js'
import type { Call } from './call.js'
import { withNamespace } from './checks.js'
import type { Parsed } from './paths.js'

/** Entries per counted request. */
const PER_REQUEST = 1000
/** About this many bytes of entries are read and sent at a time. */
const BATCH_BYTES = 1024 * 1024

export function countRange(call: Call, parsed: Parsed, range: KeyRange): void {
  withNamespace(call, parsed.ns, (info) => {
    call.async()
    call.ctx.data.countRange(info, range).then(
      (c) => call.send(200, `{"count":${c.count},"bytes":${c.bytes},"version":"${c.version}"}`),
      (err) => call.error(err),
    )
  })
}

/** One entry's export line. */
export function entryLine(e: ExportedEntry): Buffer[] {
  let tail = `,"version":"${e.version}"`
  if (e.expiresAt !== undefined) tail += `,"expiresAt":${expirySeconds(e.expiresAt)}`
  const head = Buffer.from(`{"key":${JSON.stringify(e.key)},"value":`)
  if (e.metadata === undefined) return [head, e.value, Buffer.from(`${tail}}\n`)]
  return [head, e.value, Buffer.from(`${tail},"metadata":`), e.metadata, Buffer.from('}\n')]
}

export function exportRange(call: Call, parsed: Parsed, range: KeyRange): void {
  call.op = OP.export
  if (call.headOnly)
    return call.fail(
      'method_not_allowed',
      'An export streams its body: send GET.',
      '\r\nAllow: GET',
    )
  const ctx = call.ctx
  const account = call.account!
  const plan = ctx.plans.get(account.rec.plan)
  withNamespace(call, parsed.ns, (info) => {
    call.async()
    ctx.data.snapshot(info, range).then(
      (snap) => {
        if (call.aborted || call.done) return snap.close()
        // The request is counted as the stream opens (its first 1,000 entries), the rest as
        // they go.
        ctx.usage.record(account.id, OP.export, 200, call.bytesIn, 0, Date.now())
        call.op = -1
        const name = parsed.ns.replace(/[^A-Za-z0-9_-]/g, '')
        call.openStream(
          'application/x-ndjson',
          `\r\nCache-Control: no-store\r\nContent-Disposition: attachment; filename="${name}.ndjson"`,
        )
        stream(call, snap, parsed.ns, account.id, plan.requestsPerDay)
      },
      (err) => call.error(err),
    )
  })
}

function stream(
  call: Call,
  snap: RangeSnapshot,
  ns: string,
  accountId: string,
  perDay: number | null,
): void {
  const ctx = call.ctx
  let bytes = 0
  let entries = 0
  let counted = 1
  let finished = false
  const out = responseOut(call.res, {
    closed: () => call.aborted || call.done,
    end: () => call.endStream(bytes),
    sent: (n) => {
      bytes += n
    },
  })
  /** A batch read while the client had not taken the one before. */
  let ready: Buffer | undefined
  let waiting = false
  let reading = false
  let ended = false
  let batch = 16
  const finish = (whole: boolean) => {
    if (finished) return
    finished = true
    snap.close()
    if (whole && !out.closed) out.write(`{"end":true,"entries":${entries}}\n`)
    ctx.usage.record(accountId, OP.export, 200, 0, bytes, Date.now(), 0)
    out.end()
  }
  call.onAbort = () => finish(false)
  out.write(
    `{"cairn":"export","format":1,"namespace":${JSON.stringify(ns)},"version":"${snap.version}","exportedAt":"${new Date().toISOString()}"}\n`,
  )
  const send = (data: Buffer) => {
    if (data.length > 0 && !out.write(data)) waiting = true
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
            if (perDay !== null && ctx.usage.today(accountId, Date.now()).requests >= perDay) {
              // Past the quota: cut short, the end line missing.
              if (size > 0 && !out.closed) out.write(Buffer.concat(parts, size))
              return finish(false)
            }
            counted++
            ctx.usage.record(accountId, OP.export, 200, 0, 0, Date.now())
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
        ctx.log.warn(
          { ns, err: (err as Error)?.message, errCode: (err as { code?: string })?.code },
          'export cut short',
        )
        finish(false)
      },
    )
  }
  setImmediate(read)
}
