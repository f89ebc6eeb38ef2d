// POST /v1/{namespace}?import=1&mode=merge|replace (with a prefix or a range): NDJSON in the
// export's format. The body goes to a temporary file as it arrives, each line checked on the
// way (the first pass): a bad line is answered at once, naming it, and nothing is applied.
// Only once the whole body is in and every line is good does the second pass read the file
// again and apply its entries (services/imports.ts). A body of up to 1 GiB costs the server
// one line's bytes of memory at a time, not the body's: the file holds the rest, on the disk
// of the temporary directory (TMPDIR; docs/configuration.md).
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { randomUUID } from 'node:crypto'
import type { HttpRequest } from '../http/uws.js'
import { applyImport } from '../services/imports.js'
import type { Plan } from '../services/plans.js'
import { OP } from '../services/usage.js'
import { secondsToMidnight } from '../services/limits.js'
import { bodyLimit } from '../wire/body-limits.js'
import { ERRORS, lineErrorText } from '../wire/errors.js'
import { type ImportEntry, type LineFault, importLine } from '../wire/import-line.js'
import { type KeyRange, rangeFault } from '../wire/range.js'
import { closeRequested } from './body.js'
import type { Call } from './call.js'
import { canUse, missingNow, withNamespace } from './entries.js'
import type { Parsed } from './paths.js'
import { runTransaction } from './transaction.js'
import { parseQuery } from '../wire/query.js'

/**
 * The most an import's body may be: 1 GiB, or less where the operator sets
 * CAIRN_IMPORT_MAX_BYTES (docs/configuration.md).
 */
export const MAX_IMPORT_BYTES = Math.min(
  1024 * 1024 * 1024,
  Number(process.env.CAIRN_IMPORT_MAX_BYTES) || Number.POSITIVE_INFINITY,
)
const NDJSON = /^application\/(x-ndjson|jsonl|x-jsonlines|json)\s*(;|$)/i
const NEWLINE = 0x0a

/** The lines of an NDJSON file, as byte views, one at a time. */
async function* fileLines(file: string): AsyncGenerator<Buffer> {
  let partial: Buffer[] = []
  for await (const chunk of fs.createReadStream(file, { highWaterMark: 1024 * 1024 })) {
    const b = chunk as Buffer
    let from = 0
    for (let i = b.indexOf(NEWLINE); i >= 0; i = b.indexOf(NEWLINE, from)) {
      const piece = b.subarray(from, i)
      yield partial.length === 0 ? piece : Buffer.concat([...partial, piece])
      partial = []
      from = i + 1
    }
    if (from < b.length) partial.push(b.subarray(from))
  }
  if (partial.length > 0) yield Buffer.concat(partial)
}

/** The entries of a checked import file, in order. */
async function* fileEntries(file: string, max: number | null): AsyncGenerator<ImportEntry> {
  for await (const line of fileLines(file)) {
    const e = importLine(line, max)
    if (e !== 'skip' && !('code' in e)) yield e
  }
}

/** POST /v1/{namespace}: an import with import=1, else a transaction (transaction.ts). */
export function postNamespace(call: Call, req: HttpRequest, parsed: Parsed, plan: Plan): void {
  const raw = req.getQuery()
  if (raw === undefined || raw === '') return runTransaction(call, req, parsed, plan)
  const q = parseQuery(raw)
  if (!(q instanceof URLSearchParams)) return call.fail('invalid_request', q.message)
  if (q.get('import') !== '1') return runTransaction(call, req, parsed, plan)
  importNamespace(call, req, parsed, plan, q)
}

function importNamespace(
  call: Call,
  req: HttpRequest,
  parsed: Parsed,
  plan: Plan,
  q: URLSearchParams,
): void {
  call.op = OP.import
  const ns = parsed.ns
  if (!canUse(call, ns, true)) return
  const type = req.getHeader('content-type')
  if (type !== '' && !NDJSON.test(type))
    return call.fail(
      'unsupported_media_type',
      `Content-Type ${JSON.stringify(type.slice(0, 100))} is not accepted: send an import with Content-Type: application/x-ndjson.`,
    )
  const mode = q.get('mode') ?? 'merge'
  if (mode !== 'merge' && mode !== 'replace')
    return call.fail('invalid_request', 'mode is merge (the default) or replace.')
  const range: KeyRange = {
    prefix: q.get('prefix') ?? '',
    start: q.get('start') ?? '',
    end: q.get('end') ?? '',
  }
  const fault = rangeFault(range)
  if (fault !== undefined) return call.fail('invalid_range', fault)
  if (missingNow(call, ns)) return
  const closing = closeRequested(req.getHeader('connection'))
  const declared = req.getHeader('content-length')
  if (declared !== '' && Number(declared) > MAX_IMPORT_BYTES)
    return call.fail('import_too_large', undefined, '', true)

  const file = path.join(os.tmpdir(), `cairn-import-${randomUUID()}.ndjson`)
  let fd: number
  try {
    fd = fs.openSync(file, 'wx', 0o600)
  } catch (err) {
    return call.error(err)
  }
  const ctx = call.ctx
  const account = call.account!
  const max = plan.maxValueBytes
  // A line longer than this holds a value past the plan's largest.
  const lineMax = bodyLimit(plan)
  let size = 0
  let line = 0
  let entries = 0
  let adds = 0
  let partial: Buffer[] = []
  let partialBytes = 0
  let over = false
  const drop = () => {
    if (fd >= 0) fs.closeSync(fd)
    fd = -1
    fs.rm(file, { force: true }, () => {})
  }
  const refuse = (f: LineFault, at: number) => {
    over = true
    drop()
    call.send(ERRORS[f.code].status, lineErrorText(f.code, f.message, at), '', closing)
  }
  const check = (bytes: Uint8Array) => {
    line++
    const e = importLine(bytes, max)
    if (e === 'skip') return
    if ('code' in e) return refuse(e, line)
    entries++
    adds += Buffer.byteLength(e.key) + e.value.length + ctx.data.metadataBytes(e.metadata)
  }
  const take = (chunk: Buffer) => {
    if (over) return
    size += chunk.length
    if (size > MAX_IMPORT_BYTES) {
      over = true
      drop()
      return call.fail('import_too_large', undefined, '', true)
    }
    fs.writeSync(fd, chunk)
    let from = 0
    for (let i = chunk.indexOf(NEWLINE); i >= 0 && !over; i = chunk.indexOf(NEWLINE, from)) {
      const piece = chunk.subarray(from, i)
      check(partial.length === 0 ? piece : Buffer.concat([...partial, piece]))
      partial = []
      partialBytes = 0
      from = i + 1
    }
    if (over || from >= chunk.length) return
    partial.push(Buffer.from(chunk.subarray(from)))
    partialBytes += chunk.length - from
    if (partialBytes > lineMax)
      refuse(
        {
          code: 'value_too_large',
          message: `The line is over ${lineMax} bytes: its value is larger than the plan allows.`,
        },
        line + 1,
      )
  }
  const end = () => {
    if (over || call.done) return drop()
    if (partial.length > 0) check(Buffer.concat(partial))
    if (over) return
    fs.closeSync(fd)
    fd = -1
    call.bytesIn = size
    const n = Math.max(1, Math.ceil(entries / 1000))
    call.count = n
    const now = Date.now()
    if (plan.requestsPerDay !== null) {
      const used = ctx.usage.today(account.id, now).requests
      if (used + n > plan.requestsPerDay) {
        call.count = 1
        drop()
        return call.fail(
          'quota_exceeded',
          `This import's ${entries} entries count as ${n} requests, past the ${plan.id} plan's ${plan.requestsPerDay} per UTC day.`,
          `\r\nRetry-After: ${secondsToMidnight(now)}`,
        )
      }
    }
    withNamespace(call, ns, (info) =>
      call.applyLater(() => {
        const freed = async () => {
          let bytes = 0
          if (mode === 'replace') bytes += (await ctx.data.countRange(info, range)).bytes
          else
            for await (const e of fileEntries(file, max))
              bytes += await ctx.data.bytesOf(info, e.key)
          return bytes
        }
        ctx.data
          .importFits(account, adds, freed)
          .then(() => applyImport(ctx.data, account, info, fileEntries(file, max), mode, range))
          .then(
            (r) =>
              call.send(
                200,
                `{"imported":${r.imported},"deleted":${r.deleted},"version":"${r.version}"}`,
              ),
            (err) => call.error(err),
          )
          .finally(drop)
      }),
    )
  }
  readStream(call, take, end)
}

/**
 * Hands the body's chunks to `take` as they arrive and calls `end` after the last; where the
 * request was deferred (deferred.ts), what it kept comes first.
 */
function readStream(call: Call, take: (chunk: Buffer) => void, end: () => void): void {
  call.unreadBody = false
  call.async()
  const stash = call.stash
  if (stash !== undefined) {
    for (const c of stash.chunks) take(c)
    stash.chunks.length = 0
    if (stash.done) return end()
  }
  call.onAbort = end
  call.res.onData((chunk, isLast) => {
    if (call.done) return
    // uWebSockets.js reuses the chunk's memory once this callback returns.
    take(Buffer.from(chunk))
    if (isLast) end()
  })
  call.resumeReading()
}
