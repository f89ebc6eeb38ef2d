// A Server-Sent Events reader for the watch tests: a raw node:http request that parses the
// stream as it comes and lets a test wait for events.
import http from 'node:http'

export interface SseEvent {
  event: string
  id?: string
  data: any
}

export interface Watch {
  status: number
  headers: http.IncomingHttpHeaders
  /** The body when the answer was not a stream (an error). */
  body: any
  events: SseEvent[]
  ended: boolean
  /** Resolves once `n` events have arrived (or rejects after `ms`). */
  until(n: number, ms?: number): Promise<SseEvent[]>
  /** Resolves when the server ends the stream. */
  end(ms?: number): Promise<void>
  close(): void
}

export function watch(
  baseUrl: string,
  path: string,
  key: string,
  headers: Record<string, string> = {},
): Promise<Watch> {
  const url = new URL(baseUrl)
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: url.hostname,
      port: url.port,
      path: url.pathname.replace(/\/$/, '') + path,
      headers: { 'x-api-key': key, accept: 'text/event-stream', ...headers },
      agent: false,
    })
    req.on('error', reject)
    req.on('response', (res) => {
      const w: Watch = {
        status: res.statusCode!,
        headers: res.headers,
        body: undefined,
        events: [],
        ended: false,
        until(n, ms = 10_000) {
          return new Promise((ok, fail) => {
            const started = Date.now()
            const check = () => {
              if (w.events.length >= n) return ok(w.events.slice(0, n))
              if (w.ended || Date.now() - started > ms)
                return fail(
                  new Error(
                    `${w.events.length} of ${n} events (${JSON.stringify(w.events.slice(-3))})`,
                  ),
                )
              setTimeout(check, 10)
            }
            check()
          })
        },
        end(ms = 10_000) {
          return new Promise((ok, fail) => {
            const started = Date.now()
            const check = () => {
              if (w.ended) return ok()
              if (Date.now() - started > ms) return fail(new Error('the stream did not end'))
              setTimeout(check, 10)
            }
            check()
          })
        },
        close() {
          req.destroy()
        },
      }
      let text = ''
      res.setEncoding('utf8')
      if (!String(res.headers['content-type']).startsWith('text/event-stream')) {
        res.on('data', (c) => (text += c))
        res.on('end', () => {
          w.body = JSON.parse(text)
          w.ended = true
          resolve(w)
        })
        return
      }
      res.on('data', (chunk: string) => {
        text += chunk
        for (let i = text.indexOf('\n\n'); i >= 0; i = text.indexOf('\n\n')) {
          const block = text.slice(0, i)
          text = text.slice(i + 2)
          const e: SseEvent = { event: 'message', data: undefined }
          for (const line of block.split('\n')) {
            const at = line.indexOf(': ')
            const field = line.slice(0, at)
            const value = line.slice(at + 2)
            if (field === 'event') e.event = value
            else if (field === 'id') e.id = value
            else if (field === 'data') e.data = JSON.parse(value)
          }
          w.events.push(e)
        }
      })
      res.on('end', () => {
        w.ended = true
      })
      res.on('error', () => {
        w.ended = true
      })
      resolve(w)
    })
    req.end()
  })
}
