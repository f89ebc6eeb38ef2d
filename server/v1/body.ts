// Reading a request body up to a limit. Past the limit nothing more is kept and the answer
// is 413. Where the connection stays open, the 413 goes out at once and uWebSockets.js
// discards the rest of the body. Where it will close after the answer (the client sent
// `Connection: close`), closing while the client still sends would reset the connection and
// the client would often never see the 413; so the rest is read and dropped first, up to
// DISCARD_MAX, past which the connection is cut.
import { bodyFraming } from '../http/framing.js'
import type { HttpRequest } from '../http/uws.js'
import { jsonContentType } from '../wire/content-type.js'
import { type Call, keepNothing } from './call.js'
import { type Refusal, refusal } from './refusal.js'

const DISCARD_MAX = 64 * 1024 * 1024

export function readBody(
  call: Call,
  limit: number,
  contentLength: string,
  closing: boolean,
  next: (body: Buffer) => void,
  tooLarge: 'value_too_large' | 'transaction_too_large' = 'value_too_large',
): void {
  const declared = contentLength === '' ? -1 : Number(contentLength)
  const tooBig = (size: number, cut: boolean) =>
    call.fail(
      tooLarge,
      `The request body is ${size > limit && declared > 0 ? declared : `over ${limit}`} bytes; at most ${limit} are read.`,
      '',
      cut,
    )
  call.unreadBody = false
  const stash = call.stash
  if (stash !== undefined) {
    // Already arriving (deferred.ts), the connection held until now: judged against this
    // route's limit as it comes, read whole once it is all in.
    if (declared > limit && !closing) return tooBig(declared, false)
    const judge = () => {
      if (call.done) return
      if (stash.over || stash.size > limit) {
        // As below: a connection that closes after the answer has the rest read and dropped
        // first, up to DISCARD_MAX.
        if (closing && !stash.done && stash.size - limit <= DISCARD_MAX) return keepNothing(stash)
        return tooBig(stash.size, closing && !stash.done)
      }
      if (!stash.done) return
      call.bytesIn = stash.size
      next(Buffer.concat(stash.chunks, stash.size))
    }
    stash.cap = limit
    stash.onDone = judge
    // Before judging: the operation judge starts may hold the connection again (applyLater).
    call.resumeReading()
    return judge()
  }
  if (declared > limit && (!closing || declared - limit > DISCARD_MAX))
    return tooBig(declared, closing)
  call.async()
  let chunks: Buffer[] | null = null
  let size = 0
  let over = false
  call.res.onData((chunk, isLast) => {
    if (call.done) return
    size += chunk.byteLength
    if (size > limit) {
      over = true
      if (!closing || isLast || size - limit > DISCARD_MAX) tooBig(size, closing && !isLast)
      return
    }
    if (over) return
    // uWebSockets.js reuses the chunk's memory once this callback returns: copy it.
    const piece = Buffer.copyBytesFrom(new Uint8Array(chunk))
    if (isLast) {
      call.bytesIn = size
      next(chunks === null ? piece : Buffer.concat([...chunks, piece], size))
    } else if (chunks === null) chunks = [piece]
    else chunks.push(piece)
  })
}

/** Whether the client asked for the connection to close after this request. */
export function closeRequested(connection: string): boolean {
  return connection !== '' && /(^|,)\s*close\s*(,|$)/i.test(connection)
}

/**
 * The framing checks of a request that carries a body, made while the uWS request is alive:
 * ambiguous framing is refused before anything is applied, and the connection closed, since
 * where this request ends and the next begins is unknown (true: answered). A body the client
 * will send on a connection it asked to close is noted, so the answer does not wait for it.
 */
export function refusedFraming(call: Call, req: HttpRequest): boolean {
  const framing = bodyFraming(req)
  if (framing !== '') {
    call.fail('invalid_request', framing, '', true)
    return true
  }
  if (closeRequested(req.getHeader('connection'))) {
    const length = req.getHeader('content-length')
    call.unreadBody = length === '' ? req.getHeader('transfer-encoding') !== '' : length !== '0'
  }
  return false
}

/** Reads the request's body (see readBody) with the limits its headers declare. */
export function readRequestBody(
  call: Call,
  req: HttpRequest,
  limit: number,
  next: (body: Buffer) => void,
  tooLarge?: 'value_too_large' | 'transaction_too_large',
): void {
  readBody(
    call,
    limit,
    req.getHeader('content-length'),
    closeRequested(req.getHeader('connection')),
    next,
    tooLarge,
  )
}

/** The 415 for a body that is neither JSON (any charset) nor untyped; undefined when it is. */
export function typeRefusal(req: HttpRequest): Refusal | undefined {
  const type = req.getHeader('content-type')
  if (jsonContentType(type)) return undefined
  return refusal(
    'unsupported_media_type',
    `Content-Type ${JSON.stringify(type.slice(0, 100))} is not accepted: send Content-Type: application/json (or none).`,
  )
}
