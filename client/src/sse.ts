// A Server-Sent Events parser as the HTML standard's EventSource parses a stream: lines end
// in CRLF, LF or CR (a CRLF split across chunks included); `data:` lines join with '\n';
// `event:`, `id:` and `retry:` set their fields; lines starting with ':' are comments; one
// space after the colon is dropped; an empty line dispatches the event; a message cut off by
// the end of the stream is dropped. It takes text, so it needs no Node or browser API.

/** One dispatched event. */
export interface SseMessage {
  /** The `event:` field; `'message'` when the event had none. */
  event: string
  /** The `data:` lines joined with '\n'. */
  data: string
  /** The last event id seen on the stream so far (an `id:` persists across events). */
  id: string
}

export class SseParser {
  /** The last `id:` seen, as the standard's "last event ID". */
  lastEventId = ''
  /** The last valid `retry:` (milliseconds), if any. */
  retryMs: number | undefined
  #line = ''
  #skipLf = false
  #started = false
  #event = ''
  #data: string[] = []

  /** Feeds decoded text; returns the events it completed. */
  push(chunk: string): SseMessage[] {
    const out: SseMessage[] = []
    let text = chunk
    if (!this.#started && text.length > 0) {
      this.#started = true
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1)
    }
    let start = 0
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i)
      if (c !== 0x0a && c !== 0x0d) continue
      if (c === 0x0a && this.#skipLf && i === start && this.#line === '') {
        // The LF of a CRLF whose CR ended the previous chunk (or the previous line).
        this.#skipLf = false
        start = i + 1
        continue
      }
      this.#line += text.slice(start, i)
      this.#skipLf = c === 0x0d
      start = i + 1
      const line = this.#line
      this.#line = ''
      this.#processLine(line, out)
      if (c === 0x0d && text.charCodeAt(i + 1) === 0x0a) {
        i++
        start = i + 1
        this.#skipLf = false
      }
    }
    if (start < text.length) {
      this.#line += text.slice(start)
      this.#skipLf = false
    }
    return out
  }

  #processLine(line: string, out: SseMessage[]): void {
    if (line === '') {
      this.#dispatch(out)
      return
    }
    if (line.charCodeAt(0) === 0x3a) return // a comment
    const colon = line.indexOf(':')
    let field = line
    let value = ''
    if (colon >= 0) {
      field = line.slice(0, colon)
      value = line.slice(colon + 1)
      if (value.charCodeAt(0) === 0x20) value = value.slice(1)
    }
    switch (field) {
      case 'event':
        this.#event = value
        break
      case 'data':
        this.#data.push(value)
        break
      case 'id':
        if (!value.includes('\u0000')) this.lastEventId = value
        break
      case 'retry':
        if (/^[0-9]+$/.test(value)) this.retryMs = Number(value)
        break
      // Any other field is ignored, as the standard says.
    }
  }

  #dispatch(out: SseMessage[]): void {
    const data = this.#data
    const event = this.#event
    this.#data = []
    this.#event = ''
    if (data.length === 0) return
    out.push({ event: event || 'message', data: data.join('\n'), id: this.lastEventId })
  }
}
