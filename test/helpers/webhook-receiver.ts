// A webhook receiver for tests: a real HTTP server on loopback that keeps every delivery
// (headers and exact body) and answers each with the next status queued, else `status`.
import { createHmac } from 'node:crypto'
import http from 'node:http'

export interface Delivery {
  headers: http.IncomingHttpHeaders
  body: string
  json: any
  answered: number
}

export class Receiver {
  readonly got: Delivery[] = []
  /** Statuses for the next deliveries, in order; then `status`. */
  queue: number[] = []
  status = 200
  private server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8')
      const answered = this.queue.shift() ?? this.status
      let json: any
      try {
        json = JSON.parse(body)
      } catch {}
      this.got.push({ headers: req.headers, body, json, answered })
      res.writeHead(answered, { 'content-type': 'text/plain' }).end('ok')
    })
  })

  async start(): Promise<string> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r))
    return this.url
  }

  get url(): string {
    const a = this.server.address() as { port: number }
    return `http://127.0.0.1:${a.port}/hook`
  }

  close(): Promise<void> {
    this.server.closeAllConnections()
    return new Promise((r) => this.server.close(() => r()))
  }

  /** Deliveries whose JSON matches `pick`. */
  of(pick: (j: any) => boolean): Delivery[] {
    return this.got.filter((d) => d.json && pick(d.json))
  }

  /** Resolves once `n` deliveries match `pick` (the test's own timeout is the ceiling). */
  async until(pick: (j: any) => boolean, n = 1): Promise<Delivery[]> {
    for (;;) {
      const found = this.of(pick)
      if (found.length >= n) return found
      await new Promise((r) => setTimeout(r, 50))
    }
  }
}

/** Whether a delivery carries a valid Cairn-Signature for `secret`. */
export function signedWith(d: Delivery, secret: string): boolean {
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(d.headers['cairn-signature'] ?? ''))
  if (!m) return false
  const want = createHmac('sha256', Buffer.from(secret, 'utf8'))
    .update(`${m[1]}.${d.body}`)
    .digest('hex')
  return want === m[2]
}
