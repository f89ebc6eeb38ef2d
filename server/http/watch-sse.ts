// A watch's events as Server-Sent Events, on any response that streams: /v1's (watch.ts) and
// the dashboard's live view (dashboard/api-watch.ts). Each flush is one write; what the client
// has not taken yet counts toward too_slow.
import type { ResponseOut } from './stream-out.js'
import type { Change } from '../store/types.js'
import { type WatchSink, dataOf, madeOnce } from '../services/watch-session.js'

/** Bytes written while the client has not taken them yet, past which the watch is too slow. */
export const MAX_UNSENT = 1024 * 1024

/** Where the events go: a streamed response. */
export type SseOut = ResponseOut

function eventText(type: string, data: string, version: number): string {
  return `event: ${type}\nid: ${version}\ndata: ${data}\n\n`
}

/**
 * The events of a group of changes passed on whole, as bytes: made once, however many
 * watchers the group goes to (each would otherwise build and encode the same text).
 */
const frameOf = madeOnce((changes: Change[]) => {
  let text = ''
  for (const c of changes) text += eventText(c.type, dataOf(c), c.version)
  return Buffer.from(text)
})

export class SseSink implements WatchSink {
  private out: SseOut | undefined
  private ended = false
  private unsent = 0
  private waiting = false
  /** What flush sends: event text, and frames shared with other watchers, in order. */
  private pending: (string | Buffer)[] = []
  /** Those waiting for the client to take what was sent (drained). */
  private drains: (() => void)[] = []

  /** Starts writing to `out`; `first`, when given, goes ahead of every event. */
  attach(out: SseOut, first?: string): void {
    this.out = out
    if (this.ended) return out.end()
    // Registered for the stream's life, not when a write says the client is behind: uWS
    // learns of a corked piece it held back only at the next write (cork-room.ts), and when
    // it moves held-back bytes on with no handler, it closes the connection 10 s later.
    out.onWritable(() => this.writable(out))
    if (first !== undefined) out.write(first)
  }

  event(type: string, data: string, version: number): void {
    const text = eventText(type, data, version)
    const last = this.pending.length - 1
    if (last >= 0 && typeof this.pending[last] === 'string') this.pending[last] += text
    else this.pending.push(text)
  }

  whole(changes: Change[]): void {
    this.pending.push(frameOf(changes))
  }

  flush(): boolean {
    const parts = this.pending
    this.pending = []
    const out = this.out
    if (out === undefined || out.closed || parts.length === 0) return true
    const data =
      parts.length === 1
        ? parts[0]!
        : Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : p)))
    const ok = out.write(data)
    if (ok && !this.waiting) return true
    this.unsent += typeof data === 'string' ? Buffer.byteLength(data) : data.length
    this.waiting = true
    return this.unsent <= MAX_UNSENT
  }

  /** uWS could send some of what it held back. */
  private writable(out: SseOut): void {
    this.unsent = 0
    // While a handler is registered, uWS moves what it has buffered on to the socket only
    // when something more is written: a comment line (which every SSE reader skips) pushes
    // it on. Until all of it is taken, this runs again at each chance.
    if (!out.closed && !out.write(':\n')) return
    this.waiting = false
    const drains = this.drains
    this.drains = []
    for (const fn of drains) fn()
  }

  drained(): Promise<void> {
    if (!this.waiting || this.out === undefined || this.out.closed) return Promise.resolve()
    return new Promise((resolve) => this.drains.push(resolve))
  }

  fail(code: string, message: string): void {
    this.pending = []
    if (this.out?.closed === false)
      this.out.write(`event: error\ndata: ${JSON.stringify({ code, message })}\n\n`)
    this.end()
  }

  end(): void {
    this.ended = true
    if (this.out?.closed === false) this.out.end()
  }
}
