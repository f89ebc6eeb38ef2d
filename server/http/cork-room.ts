// Writes that never give uWebSockets.js more than its cork buffer has room for.
//
// Inside a cork, this build of uWebSockets.js (@trufflesuite/uws-js-unofficial 20.30) copies a
// write into a 16 KiB cork buffer. A write that does not fit makes it send what is corked
// first; when the kernel takes less than all of that (its send buffer is all but full while
// uWS itself holds nothing back), the corked bytes are kept for later but the new write is
// dropped without a word. uWebSockets fixed it upstream in April 2026 ("Buffer optional uncork
// data after failure to flush already corked data"); this build predates it.
//
// What that does to us:
// - a chunked write (a watch's events): the chunk's size line goes out and its bytes never do,
//   so the client loses events and then cannot parse the stream ("Chunk size overflow");
// - res.end(body): whatever write overflows is lost: a header, or the body. A lost body leaves
//   the answer pending until uWS closes the connection, and uWS ends the process when a request
//   handler returns with its answer pending and no abort handler attached.
//
// The kernel refuses corked bytes only when the client has not read what was sent to it
// before: a client that pipelines requests and reads slowly. Answers to requests pipelined in
// one packet pile up in one cork, so any answer can overflow it there, whatever its size.
//
// So a write that can be large goes in pieces, each in a cork of its own with room left for
// the chunk's size line, and a stream writes nothing until its request's handler has let go
// of the cork (stream-out.ts): a cork we open then starts empty, and streams (watches) lose
// nothing. A body given by endBody goes by tryEnd (held-body.ts), whose write uWS reports when
// it did not make it, so that body is never lost. A header still can be, rarely, and so can
// the body of an answer that closes its connection (res.end: tryEnd cannot close); every
// answer with a body has an abort handler, so what that client can lose is its own answer.
import type { HttpResponse } from './uws.js'

/**
 * The abort handler of an answer with a body ended within its request handler: the client
 * leaving changes nothing, but uWS must find one (see above).
 */
export function ignoreAbort(): void {}

/** The cork buffer of uWebSockets.js (LoopData::CORK_BUFFER_SIZE). */
const CORK_BYTES = 16 * 1024

/**
 * The most bytes one chunked write carries: leaves room in the cork buffer for the chunk's
 * size line and, on a stream's first write, the head (status line and headers, well under
 * 4 KiB: no header we write carries a body).
 */
export const PIECE_BYTES = CORK_BYTES - 4 * 1024

/**
 * Writes `data` as chunks of at most PIECE_BYTES, each in a cork of its own. false when uWS
 * now holds some of it back (the client has not taken what came before); uWS learns that a
 * corked write was held back only at the next write, so false can come one write late.
 */
export function writeChunks(res: HttpResponse, data: string | Buffer): boolean {
  let ok = true
  if ((typeof data === 'string' ? data.length * 3 : data.length) <= PIECE_BYTES) {
    res.cork(() => {
      ok = res.write(data)
    })
    return ok
  }
  const bytes = typeof data === 'string' ? Buffer.from(data) : data
  for (let at = 0; at < bytes.length; at += PIECE_BYTES) {
    const piece = bytes.subarray(at, at + PIECE_BYTES)
    res.cork(() => {
      if (!res.write(piece)) ok = false
    })
  }
  return ok
}
