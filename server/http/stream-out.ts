// A uWS response that stays open, as a stream of text chunks: what the /v1 watch and the
// dashboard's streamed routes write through. Each chunk is written corked, in pieces that fit
// uWS's cork buffer (cork-room.ts says why); a handler waiting for the client to take what uWS
// holds back returns true (it wrote what it meant to), as uWS asks of onWritable handlers.
//
// What is written before the event loop next comes round waits until then. A stream opens in
// its request's handler or in a promise callback right after it (uWS.js runs those before it
// lets go of the request's cork), where a piece would share the cork with the head and the
// pieces before it, and could overflow it.
import { writeChunks } from './cork-room.js'
import type { HttpResponse } from './uws.js'

/** An open streamed response. */
export interface ResponseOut {
  /**
   * Sends a chunk (a Buffer goes as it is: one made once for many streams is not encoded
   * again for each); false when the client has not yet taken what was sent before.
   */
  write(data: string | Buffer): boolean
  /**
   * Runs `fn` each time the client has taken some of what was waiting (after write answered
   * false), until the response ends. uWS moves what it holds back only when something more is
   * written, so `fn` should write (SseSink writes a comment line when it has nothing else).
   */
  onWritable(fn: () => void): void
  end(): void
  /** The response ended or the client left. */
  readonly closed: boolean
}

/** `res` as a ResponseOut; `sent` learns the length of each chunk written (a Buffer's bytes). */
export function responseOut(
  res: HttpResponse,
  o: { closed(): boolean; end(): void; sent?(chars: number): void },
): ResponseOut {
  let held: (string | Buffer)[] | undefined = []
  let ending = false
  setImmediate(() => {
    const texts = held!
    held = undefined
    if (!o.closed()) for (const data of texts) writeChunks(res, data)
    if (ending) o.end()
  })
  return {
    write(data) {
      o.sent?.(data.length)
      if (held === undefined) return writeChunks(res, data)
      held.push(data)
      return true
    },
    onWritable(fn) {
      res.onWritable(() => {
        fn()
        return true
      })
    },
    end() {
      if (held === undefined) o.end()
      else ending = true
    },
    get closed() {
      return o.closed()
    },
  }
}
