// POST /v1/{namespace}?import=1&mode=merge|replace (with a prefix or a range): NDJSON in the
// export's format. The body goes to a temporary file as it arrives, each line checked on the
// way (the first pass), as records of its checked entries: a bad line is answered at once,
// naming it, and nothing is applied. Only once the whole body is in and every line is good
// does the second pass read the records back and apply them (services/imports.ts). A body of up to 1 GiB costs the server
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
import { missingRefusal, useRefusal } from './checks.js'
import type { NamespaceInfo } from '../services/accounts.js'
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

/** Bytes of checked entries gathered before they go to the file. */
const SPOOL_BYTES = 1024 * 1024
const NONE = 0xffffffff

/**
 * Checked entries go to the file as records (key, value, metadata, expiry, each behind its
 * length), so the second pass reads them back without parsing JSON again.
 */
function record(e: ImportEntry): Buffer[] {
  const key = Buffer.from(e.key)
  const head = Buffer.allocUnsafe(8)
  head.writeUInt32LE(key.length, 0)
  head.writeUInt32LE(e.value.length, 4)
  const tail = Buffer.allocUnsafe(12)
  tail.writeUInt32LE(e.metadata === undefined ? NONE : e.metadata.length, 0)
  tail.writeDoubleLE(e.expiresAt ?? Number.NaN, 4)
  return e.metadata === undefined
    ? [head, key, e.value, tail]
    : [head, key, e.value, tail, e.metadata]
}

/** The entries of a spooled import file, in order. */
async function* fileEntries(file: string): AsyncGenerator<ImportEntry> {
  let buf: Buffer = Buffer.alloc(0)
  for await (const chunk of fs.createReadStream(file, { highWaterMark: 1024 * 1024 })) {
    buf = buf.length === 0 ? (chunk as Buffer) : Buffer.concat([buf, chunk as Buffer])
    let at = 0
    for (;;) {
      if (buf.length - at < 8) break
      const kl = buf.readUInt32LE(at)
      const vl = buf.readUInt32LE(at + 4)
      const fixed = 8 + kl + vl + 12
      if (buf.length - at < fixed) break
      const ml = buf.readUInt32LE(at + 8 + kl + vl)
      const whole = fixed + (ml === NONE ? 0 : ml)
      if (buf.length - at < whole) break
      const e: ImportEntry = {
        key: buf.toString('utf8', at + 8, at + 8 + kl),
        value: buf.subarray(at + 8 + kl, at + 8 + kl + vl),
      }
      const x = buf.readDoubleLE(at + 8 + kl + vl + 4)
      if (!Number.isNaN(x)) e.expiresAt = x
      if (ml !== NONE) e.metadata = buf.subarray(at + fixed, at + whole)
      yield e
      at += whole
    }
    buf = buf.subarray(at)
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
  const refused = useRefusal(call.key!, ns, true)
  if (refused !== undefined) return call.refuse(refused)
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
  const missing = missingRefusal(call, ns)
  if (missing !== undefined) return call.refuse(missing)
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
  let spool: Buffer[] = []
  let spooled = 0
  const spill = () => {
    if (spooled > 0) fs.writeSync(fd, Buffer.concat(spool, spooled))
    spool = []
    spooled = 0
  }
  const drop = () => {
    if (fd >= 0) fs.closeSync(fd)
    fd = -1
    // At once: a server stopped right after the answer would leave an asynchronous one undone.
    fs.rmSync(file, { force: true })
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
    for (const part of record(e)) {
      spool.push(part)
      spooled += part.length
    }
    if (spooled >= SPOOL_BYTES) spill()
  }
  const take = (chunk: Buffer) => {
    if (over) return
    size += chunk.length
    if (size > MAX_IMPORT_BYTES) {
      over = true
      drop()
      return call.fail('import_too_large', undefined, '', true)
    }
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
    spill()
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
    // As withNamespace, with the file let go when the namespace turns out to be missing (a
    // shared store asked only now) or the lookup fails.
    const found = ctx.accounts.namespace(account, ns)
    const go = (info: NamespaceInfo | undefined) => {
      if (info !== undefined) return apply(info)
      drop()
      call.fail('namespace_not_found', `There is no namespace "${ns}".`)
    }
    if (!(found instanceof Promise)) return go(found)
    call.async()
    found.then(go, (err) => {
      drop()
      call.error(err)
    })
  }
  const apply = (info: NamespaceInfo) =>
    call.applyLater(() => {
      const freed = async () => {
        let bytes = 0
        if (mode === 'replace') bytes += (await ctx.data.countRange(info, range)).bytes
        else for await (const e of fileEntries(file)) bytes += await ctx.data.bytesOf(info, e.key)
        return bytes
      }
      ctx.data
        .importFits(account, adds, freed)
        .then(() => applyImport(ctx.data, account, info, fileEntries(file), mode, range))
        .then(
          (r) =>
            call.send(
              200,
              `{"imported":${r.imported},"deleted":${r.deleted},"version":"${r.version}"}`,
            ),
          (err) => call.error(err),
        )
        .finally(drop)
    })
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
