// An import's body on its way in (the contract's "Export and import"), whatever carries it
// (/v1 in v1/import.ts, the dashboard's upload in dashboard/api-transfer.ts). The body goes
// to a temporary file as it arrives, each line checked on the way (the first pass), as
// records of its checked entries: a bad line is refused at once, naming it, and nothing is
// applied. Only once the whole body is in and every line is good does the second pass read
// the records back and apply them (imports.ts). A body of up to 1 GiB costs the server one
// line's bytes of memory at a time, not the body's: the file holds the rest, on the disk of
// the temporary directory (TMPDIR; docs/configuration.md).
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { randomUUID } from 'node:crypto'
import type { ErrorCode } from '../wire/errors.js'
import { type ImportEntry, importLine } from '../wire/import-line.js'
import type { KeyRange } from '../wire/range.js'
import type { Account, NamespaceInfo } from './accounts.js'
import type { Data } from './data.js'
import { type Imported, applyImport } from './imports.js'

/**
 * The most an import's body may be: 1 GiB, or less where the operator sets
 * CAIRN_IMPORT_MAX_BYTES (docs/configuration.md).
 */
export const MAX_IMPORT_BYTES = Math.min(
  1024 * 1024 * 1024,
  Number(process.env.CAIRN_IMPORT_MAX_BYTES) || Number.POSITIVE_INFINITY,
)
const NEWLINE = 0x0a
/** Bytes of checked entries gathered before they go to the file. */
const SPOOL_BYTES = 1024 * 1024
const NONE = 0xffffffff

/** Why a body is refused: its code, and for a line's fault the message and its line. */
export interface ImportRefusal {
  code: ErrorCode
  /** Absent for import_too_large: the code's own message. */
  message?: string
  line?: number
}

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

export class ImportSpool {
  /** The body's bytes so far. */
  size = 0
  /** Entry lines checked (header, end and blank lines apart). */
  entries = 0
  /** The bytes the entries add to the account's storage, before what they replace. */
  adds = 0
  /** Set once the body is refused: nothing more is taken, and the file is gone. */
  refused: ImportRefusal | undefined
  private line = 0
  private partial: Buffer[] = []
  private partialBytes = 0
  private spool: Buffer[] = []
  private spooled = 0
  private fd: number
  private readonly file: string

  /**
   * `maxValueBytes`: the plan's; `lineMax`: a line longer than this holds a value past it;
   * `metadataBytes`: what a metadata object counts for in storage (Data.metadataBytes).
   * Throws when the temporary file cannot be made.
   */
  constructor(
    private o: {
      maxValueBytes: number | null
      lineMax: number
      metadataBytes: (m: Buffer | undefined) => number
    },
  ) {
    this.file = path.join(os.tmpdir(), `cairn-import-${randomUUID()}.ndjson`)
    this.fd = fs.openSync(this.file, 'wx', 0o600)
  }

  private spill(): void {
    if (this.spooled > 0) fs.writeSync(this.fd, Buffer.concat(this.spool, this.spooled))
    this.spool = []
    this.spooled = 0
  }

  /** Lets go of the file (at once: a server stopped right after the answer leaves none). */
  drop(): void {
    if (this.fd >= 0) fs.closeSync(this.fd)
    this.fd = -1
    fs.rmSync(this.file, { force: true })
  }

  private refuse(r: ImportRefusal): ImportRefusal {
    this.refused = r
    this.drop()
    return r
  }

  private check(bytes: Uint8Array): ImportRefusal | undefined {
    this.line++
    const e = importLine(bytes, this.o.maxValueBytes)
    if (e === 'skip') return undefined
    if ('code' in e) return this.refuse({ ...e, line: this.line })
    this.entries++
    this.adds += Buffer.byteLength(e.key) + e.value.length + this.o.metadataBytes(e.metadata)
    for (const part of record(e)) {
      this.spool.push(part)
      this.spooled += part.length
    }
    if (this.spooled >= SPOOL_BYTES) this.spill()
    return undefined
  }

  /** Takes the body's next chunk; the refusal when this chunk makes the body refused. */
  take(chunk: Buffer): ImportRefusal | undefined {
    if (this.refused !== undefined) return undefined
    this.size += chunk.length
    if (this.size > MAX_IMPORT_BYTES) return this.refuse({ code: 'import_too_large' })
    let from = 0
    for (let i = chunk.indexOf(NEWLINE); i >= 0; i = chunk.indexOf(NEWLINE, from)) {
      const piece = chunk.subarray(from, i)
      const r = this.check(
        this.partial.length === 0 ? piece : Buffer.concat([...this.partial, piece]),
      )
      if (r !== undefined) return r
      this.partial = []
      this.partialBytes = 0
      from = i + 1
    }
    if (from >= chunk.length) return undefined
    this.partial.push(Buffer.from(chunk.subarray(from)))
    this.partialBytes += chunk.length - from
    if (this.partialBytes > this.o.lineMax)
      return this.refuse({
        code: 'value_too_large',
        message: `The line is over ${this.o.lineMax} bytes: its value is larger than the plan allows.`,
        line: this.line + 1,
      })
    return undefined
  }

  /** The body is all in: its last line is checked and the file closed for reading. */
  end(): ImportRefusal | undefined {
    if (this.refused !== undefined) return this.refused
    if (this.partial.length > 0) {
      const r = this.check(Buffer.concat(this.partial))
      if (r !== undefined) return r
    }
    this.spill()
    fs.closeSync(this.fd)
    this.fd = -1
    return undefined
  }

  /**
   * Applies the checked body (once end() found it good): refused whole past the storage
   * quota, else applied in order. The file is let go either way.
   */
  async apply(
    data: Data,
    account: Account,
    info: NamespaceInfo,
    mode: 'merge' | 'replace',
    range: KeyRange,
  ): Promise<Imported> {
    const freed = async () => {
      let bytes = 0
      if (mode === 'replace') bytes += (await data.countRange(info, range)).bytes
      else for await (const e of fileEntries(this.file)) bytes += await data.bytesOf(info, e.key)
      return bytes
    }
    try {
      await data.importFits(account, this.adds, freed)
      return await applyImport(data, account, info, fileEntries(this.file), mode, range)
    } finally {
      this.drop()
    }
  }
}
