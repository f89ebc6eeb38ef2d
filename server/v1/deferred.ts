// A request answered after an await before its operation starts. uWebSockets.js's request
// object dies when the handler returns and a body's chunks arrive only to a handler
// registered before then; a store shared with other front ends answers authentication
// misses and rate limits asynchronously. So on that path the request's headers and query
// are copied out (`freeze`) and its body is kept as it arrives (`stashBody`), up to the
// largest body any plan accepts, until the operation asks for it (body.ts).
import type { HttpRequest } from '../http/uws.js'
import type { Call } from './call.js'

export interface BodyStash {
  chunks: Buffer[]
  size: number
  /** More arrived than `cap`: the rest was dropped and the body is too large for any plan. */
  over: boolean
  done: boolean
  /** Called once when the last chunk is in (set by a reader that came first). */
  onDone: (() => void) | undefined
}

/** The parts of a request the /v1 operations read, copied out of uWebSockets.js. */
export function freeze(req: HttpRequest): HttpRequest {
  const headers = new Map<string, string>()
  req.forEach((k, v) => {
    const had = headers.get(k)
    headers.set(k, had === undefined ? v : `${had}, ${v}`)
  })
  const url = req.getUrl()
  const query = req.getQuery()
  const method = req.getMethod()
  return {
    getHeader: (name: string) => headers.get(name) ?? '',
    getUrl: () => url,
    getQuery: () => query,
    getMethod: () => method,
  } as unknown as HttpRequest
}

/** Keeps the body as it arrives, dropping what passes `cap`. */
export function stashBody(call: Call, cap: number): void {
  const stash: BodyStash = { chunks: [], size: 0, over: false, done: false, onDone: undefined }
  call.stash = stash
  call.res.onData((chunk, isLast) => {
    stash.size += chunk.byteLength
    if (stash.size > cap) stash.over = true
    // uWebSockets.js reuses the chunk's memory once this callback returns: copy it.
    else stash.chunks.push(Buffer.copyBytesFrom(new Uint8Array(chunk)))
    if (isLast) {
      stash.done = true
      stash.onDone?.()
    }
  })
}
