// A request answered after an await before its operation starts. uWebSockets.js's request
// object dies when the handler returns and a body's chunks arrive only to a handler
// registered before then; a store shared with other front ends answers authentication
// misses and rate limits asynchronously. So on that path the request's headers and query
// are copied out (`freeze`) and its body is kept as it arrives (`stashBody`), up to the
// largest body any plan accepts, until the operation asks for it (body.ts).
import type { Context } from '../context.js'
import type { HttpRequest } from '../http/uws.js'
import type { BodyStash, Call } from './call.js'
import { TX_EXTRA_BODY, largestBody } from '../wire/body-limits.js'

const FROZEN = Symbol('frozen')

/**
 * Readies a request to be answered after an await: its headers copied out, its body (for
 * PUT, PATCH and POST) kept as it arrives, the abort handler registered. A request already
 * deferred comes back as it is.
 */
export function defer(call: Call, req: HttpRequest, method: string, ctx: Context): HttpRequest {
  if ((req as unknown as Record<symbol, boolean>)[FROZEN]) return req
  const frozen = freeze(req)
  if (method === 'put' || method === 'patch') stashBody(call, largestBody(ctx.plans.info().plans))
  else if (method === 'post') stashBody(call, largestBody(ctx.plans.info().plans) + TX_EXTRA_BODY)
  call.async()
  return frozen
}

/** The parts of a request the /v1 operations read, copied out of uWebSockets.js. */
function freeze(req: HttpRequest): HttpRequest {
  const headers = new Map<string, string>()
  req.forEach((k, v) => {
    const had = headers.get(k)
    headers.set(k, had === undefined ? v : `${had}, ${v}`)
  })
  const url = req.getUrl()
  const query = req.getQuery()
  const method = req.getMethod()
  return {
    [FROZEN]: true,
    getHeader: (name: string) => headers.get(name) ?? '',
    getUrl: () => url,
    getQuery: () => query,
    getMethod: () => method,
  } as unknown as HttpRequest
}

/**
 * Keeps the body as it arrives, dropping what passes `cap`, and what comes after the answer.
 * The connection is not read meanwhile (the operation resumes it when it wants the body,
 * body.ts), so until then what is kept is what came with the request's head: a caller
 * nobody knows yet cannot make the server hold the largest body any plan takes.
 */
function stashBody(call: Call, cap: number): void {
  const stash: BodyStash = {
    chunks: [],
    size: 0,
    cap,
    over: false,
    done: false,
    onDone: undefined,
  }
  call.stash = stash
  call.holdReading()
  call.res.onData((chunk, isLast) => {
    stash.size += chunk.byteLength
    if (call.done || call.aborted) stash.chunks.length = 0
    else if (stash.size > stash.cap) {
      stash.over = true
      stash.chunks.length = 0
    }
    // uWebSockets.js reuses the chunk's memory once this callback returns: copy it.
    else stash.chunks.push(Buffer.copyBytesFrom(new Uint8Array(chunk)))
    if (isLast) stash.done = true
    // Too large is known before the end: the operation answers at once.
    if (isLast || stash.over) stash.onDone?.()
  })
}
