// Exports and imports of a namespace (NDJSON, `GET ?export=1` and `POST ?import=1`): the raw
// stream, its entries as an async iterable, and imports from entries or NDJSON bytes.
import { parseJson, stringifyJson, type BigIntMode } from './json.js'
import { newRequestId, responseError, type TransportConfig } from './transport.js'
import { BadRequestError, NetworkError } from './errors.js'
import { type Point, pointText } from './history.js'

/** Which part of a namespace: a prefix and/or a key range (`start` inclusive, `end` exclusive). */
export interface RangeOptions {
  prefix?: string
  start?: string
  end?: string
  signal?: AbortSignal
}

export interface ExportOptions extends RangeOptions {
  /** Export the namespace as it was at this point (its header's version is the point's). */
  at?: Point
}

/** One entry of an export, or one to import. */
export interface PortableEntry<T = unknown> {
  key: string
  value: T
  /** The entry's version when it was exported (ignored on import). */
  version?: string
  /** Unix seconds. */
  expiresAt?: number
  metadata?: Record<string, unknown>
}

export interface ImportOptions extends RangeOptions {
  /** `merge` (default) leaves other keys alone; `replace` deletes the range's others. */
  mode?: 'merge' | 'replace'
}

export interface ImportResult {
  imported: number
  deleted: number
  version: string
}

/** What an import may come from: entries, NDJSON text or bytes, sync or async, or a stream. */
export type ImportSource =
  | Iterable<PortableEntry | string | Uint8Array>
  | AsyncIterable<PortableEntry | string | Uint8Array>
  | ReadableStream<Uint8Array>

function rangeQuery(o: RangeOptions): string {
  let q = ''
  for (const name of ['prefix', 'start', 'end'] as const) {
    const v = o[name]
    if (v !== undefined) q += `&${name}=${encodeURIComponent(v)}`
  }
  return q
}

/** The raw NDJSON of an export, as the server sends it. Throws CairnError for an error answer. */
export async function exportBytes(
  cfg: TransportConfig,
  nsPath: string,
  o: ExportOptions,
): Promise<ReadableStream<Uint8Array>> {
  const doFetch = cfg.fetch ?? globalThis.fetch
  const id = newRequestId()
  const at = o.at === undefined ? '' : `&at=${encodeURIComponent(pointText(o.at))}`
  let res: Response
  try {
    res = await doFetch(`${cfg.baseUrl}/${nsPath}?export=1${rangeQuery(o)}${at}`, {
      method: 'GET',
      headers: { 'x-api-key': cfg.apiKey, 'x-request-id': id },
      signal: o.signal,
    })
  } catch (err) {
    if (o.signal?.aborted) throw o.signal.reason
    throw new NetworkError({
      status: 0,
      code: 'network_error',
      message: `Could not reach ${cfg.baseUrl}: ${(err as Error).message}`,
      cause: err,
    })
  }
  if (res.status >= 400) throw responseError(res, await res.text(), id).error
  if (res.body === null) throw new TypeError('Cairn: this fetch gives no response body stream.')
  return res.body
}

/** The lines of an NDJSON byte stream, as text. */
async function* lines(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder('utf-8', { fatal: true })
  const reader = stream.getReader()
  let partial = ''
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      partial += decoder.decode(value, { stream: true })
      let nl = partial.indexOf('\n')
      while (nl >= 0) {
        yield partial.slice(0, nl)
        partial = partial.slice(nl + 1)
        nl = partial.indexOf('\n')
      }
    }
    partial += decoder.decode()
    if (partial !== '') yield partial
  } finally {
    reader.releaseLock()
  }
}

/**
 * The entries of an export, in key order, each as it was at the export's version. Throws
 * NetworkError when the download ends without its end line (it was cut short).
 */
export async function* exportEntries<T>(
  stream: ReadableStream<Uint8Array>,
  bigints: BigIntMode,
): AsyncGenerator<PortableEntry<T>> {
  let ended = false
  for await (const line of lines(stream)) {
    if (line === '') continue
    const o = parseJson(line, bigints) as Record<string, unknown>
    if (o.end === true) {
      ended = true
      continue
    }
    if (typeof o.key !== 'string') continue
    yield o as unknown as PortableEntry<T>
  }
  if (!ended)
    throw new NetworkError({
      status: 0,
      code: 'network_error',
      message: 'The export ended without its end line: it was cut short; export again.',
    })
}

/** An entry's import line. */
function entryLine(e: PortableEntry): string {
  if (e === null || typeof e !== 'object' || typeof e.key !== 'string' || !('value' in e))
    throw new BadRequestError({
      status: 400,
      code: 'invalid_import',
      message: 'An import entry is an object with a string "key" and a "value".',
    })
  const value = stringifyJson(e.value)
  if (value === undefined)
    throw new BadRequestError({
      status: 400,
      code: 'invalid_import',
      message: `The value of ${JSON.stringify(e.key)} is not JSON.`,
    })
  let s = `{"key":${JSON.stringify(e.key)},"value":${value}`
  if (e.expiresAt !== undefined) s += `,"expiresAt":${e.expiresAt}`
  if (e.metadata !== undefined) s += `,"metadata":${stringifyJson(e.metadata)}`
  return `${s}}\n`
}

function bodyOf(source: ImportSource): ReadableStream<Uint8Array> {
  if (typeof (source as ReadableStream).getReader === 'function')
    return source as ReadableStream<Uint8Array>
  const enc = new TextEncoder()
  const it = (
    Symbol.asyncIterator in (source as object)
      ? (source as AsyncIterable<unknown>)[Symbol.asyncIterator]()
      : (source as Iterable<unknown>)[Symbol.iterator]()
  ) as AsyncIterator<unknown> | Iterator<unknown>
  return new ReadableStream<Uint8Array>({
    async pull(ctl) {
      // About 64 KiB at a time: a source of many small entries goes in few chunks.
      let text = ''
      while (text.length < 65536) {
        const r = await it.next()
        if (r.done) {
          if (text !== '') ctl.enqueue(enc.encode(text))
          return ctl.close()
        }
        const v = r.value
        if (typeof v === 'string') text += v
        else if (v instanceof Uint8Array) {
          if (text !== '') ctl.enqueue(enc.encode(text))
          text = ''
          ctl.enqueue(v)
        } else text += entryLine(v as PortableEntry)
      }
      ctl.enqueue(enc.encode(text))
    },
  })
}

/** Sends an import; never retried (its body is a stream), though sending it again is safe. */
export async function sendImport(
  cfg: TransportConfig,
  nsPath: string,
  source: ImportSource,
  o: ImportOptions,
): Promise<ImportResult> {
  const doFetch = cfg.fetch ?? globalThis.fetch
  const id = newRequestId()
  const mode = o.mode === undefined ? '' : `&mode=${o.mode}`
  let res: Response
  try {
    res = await doFetch(`${cfg.baseUrl}/${nsPath}?import=1${mode}${rangeQuery(o)}`, {
      method: 'POST',
      headers: {
        'x-api-key': cfg.apiKey,
        'x-request-id': id,
        'content-type': 'application/x-ndjson',
      },
      body: bodyOf(source),
      signal: o.signal,
      duplex: 'half',
    } as RequestInit)
  } catch (err) {
    if (o.signal?.aborted) throw o.signal.reason
    if (err instanceof BadRequestError) throw err
    const cause = (err as { cause?: unknown }).cause
    if (cause instanceof BadRequestError) throw cause
    throw new NetworkError({
      status: 0,
      code: 'network_error',
      message: `Could not reach ${cfg.baseUrl}: ${(err as Error).message}`,
      cause: err,
    })
  }
  const text = await res.text()
  if (res.status >= 400) {
    const { error } = responseError(res, text, id)
    try {
      const line = JSON.parse(text)?.error?.line
      if (Number.isSafeInteger(line)) Object.assign(error, { line })
    } catch {}
    throw error
  }
  const r = JSON.parse(text) as ImportResult
  return { imported: r.imported, deleted: r.deleted, version: String(r.version) }
}
