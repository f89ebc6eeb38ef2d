// Raw HTTP for the contract tests. node:http sends the path exactly as given, so keys with
// `.` segments, `%2F` or bad percent-encoding reach the server untouched (fetch would
// normalise them away).
import http from 'node:http'
import net from 'node:net'

export interface Res {
  status: number
  headers: http.IncomingHttpHeaders
  text: string
  json: any
}

export interface ReqOptions {
  /** A JS value is sent as JSON; a string or Buffer is sent as is. */
  body?: unknown
  /** Extra headers; a null value removes a default header. */
  headers?: Record<string, string | null>
  /** The API key to send in x-api-key; null sends none. Defaults to the client's key. */
  key?: string | null
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 32 })

function parseJson(text: string): unknown {
  if (text === '') return undefined
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

export function rawRequest(
  url: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string | Buffer,
): Promise<Res> {
  const u = new URL(url)
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: u.hostname, port: u.port, method, path, headers, agent },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8')
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            text,
            json: parseJson(text),
          })
        })
        res.on('error', reject)
      },
    )
    req.on('error', reject)
    req.end(body)
  })
}

/**
 * Sends a request on a fresh socket and reads whatever answer comes, even when the server
 * answers before the body is fully sent and then closes (as it does for bodies over the
 * value limit).
 */
export function sendLargeBody(
  url: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body: Buffer,
): Promise<Res> {
  const u = new URL(url)
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(u.port), u.hostname)
    const chunks: Buffer[] = []
    let done = false
    const finish = () => {
      if (done) return
      const raw = Buffer.concat(chunks)
      const end = raw.indexOf('\r\n\r\n')
      if (end < 0) {
        done = true
        reject(new Error(`no HTTP response (${raw.length} bytes read)`))
        return
      }
      const head = raw.subarray(0, end).toString('latin1').split('\r\n')
      const status = Number(head[0]!.split(' ')[1])
      const hs: http.IncomingHttpHeaders = {}
      for (const line of head.slice(1)) {
        const i = line.indexOf(':')
        hs[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim()
      }
      let bodyBytes = raw.subarray(end + 4)
      const length = Number(hs['content-length'] ?? Number.NaN)
      if (Number.isFinite(length)) {
        if (bodyBytes.length < length) return
        bodyBytes = bodyBytes.subarray(0, length)
      }
      done = true
      socket.destroy()
      const text = bodyBytes.toString('utf8')
      resolve({ status, headers: hs, text, json: parseJson(text) })
    }
    socket.on('data', (c: Buffer) => {
      chunks.push(c)
      finish()
    })
    socket.on('close', finish)
    socket.on('end', finish)
    // The server may reset the connection while we still write: that is expected.
    socket.on('error', () => finish())
    const lines = [`${method} ${path} HTTP/1.1`, `Host: ${u.host}`, 'Connection: close']
    for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`)
    lines.push(`Content-Length: ${body.length}`)
    socket.write(lines.join('\r\n') + '\r\n\r\n')
    let offset = 0
    const writeMore = () => {
      while (offset < body.length && !socket.destroyed) {
        const piece = body.subarray(offset, offset + 65536)
        offset += piece.length
        if (!socket.write(piece)) {
          socket.once('drain', writeMore)
          return
        }
      }
    }
    writeMore()
  })
}

export class Client {
  constructor(
    readonly baseUrl: string,
    readonly key: string,
  ) {}

  /** `path` is appended raw to the /v1 base path, e.g. `/ns/a%2Fb`. */
  req(method: string, path: string, opts: ReqOptions = {}): Promise<Res> {
    const base = new URL(this.baseUrl)
    const headers: Record<string, string> = {}
    const key = opts.key === undefined ? this.key : opts.key
    if (key !== null) headers['x-api-key'] = key
    let body: string | Buffer | undefined
    if (opts.body !== undefined) {
      body =
        typeof opts.body === 'string' || Buffer.isBuffer(opts.body)
          ? opts.body
          : JSON.stringify(opts.body)
      headers['content-type'] = 'application/json'
    }
    for (const [k, v] of Object.entries(opts.headers ?? {})) {
      if (v === null) delete headers[k.toLowerCase()]
      else headers[k.toLowerCase()] = v
    }
    return rawRequest(this.baseUrl, method, base.pathname.replace(/\/$/, '') + path, headers, body)
  }

  get(path: string, opts?: ReqOptions) {
    return this.req('GET', path, opts)
  }
  put(path: string, body: unknown, opts: ReqOptions = {}) {
    return this.req('PUT', path, { ...opts, body })
  }
  del(path: string, opts?: ReqOptions) {
    return this.req('DELETE', path, opts)
  }
  post(path: string, body: unknown, opts: ReqOptions = {}) {
    return this.req('POST', path, { ...opts, body })
  }

  async createNamespace(name: string): Promise<void> {
    const res = await this.post('/namespaces', { name })
    if (res.status !== 201) throw new Error(`creating namespace ${name}: ${res.status} ${res.text}`)
  }

  /** Stores a value and fails loudly if the server does not acknowledge it. */
  async mustPut(ns: string, key: string, value: unknown, extra: object = {}): Promise<string> {
    const res = await this.put(`/${ns}/${encodeKey(key)}`, { value, ...extra })
    if (res.status !== 200 && res.status !== 201)
      throw new Error(`PUT ${ns}/${key}: ${res.status} ${res.text}`)
    return res.json.version
  }

  /** Every key of a namespace, walking all pages. */
  async listAll(ns: string, prefix = '', limit = 1000): Promise<string[]> {
    const keys: string[] = []
    let cursor: string | undefined
    do {
      const q = new URLSearchParams({ limit: String(limit) })
      if (prefix) q.set('prefix', prefix)
      if (cursor) q.set('cursor', cursor)
      const res = await this.get(`/${ns}?${q}`)
      if (res.status !== 200) throw new Error(`list ${ns}: ${res.status} ${res.text}`)
      keys.push(...res.json.keys)
      cursor = res.json.cursor
    } while (cursor)
    return keys
  }
}

/** Percent-encodes a key for a path, leaving `/` raw (the server treats `/` and `%2F` alike). */
export function encodeKey(key: string): string {
  return key
    .split('/')
    .map((s) => encodeURIComponent(s))
    .join('/')
}

/** Compares two strings in UTF-8 byte order, as the server lists keys. */
export function utf8Compare(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'))
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms))
}
