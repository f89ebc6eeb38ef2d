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
// - res.end(body): the head goes out and the body never does; the answer stays pending until
//   uWS times the connection out, and an answer given inside its request handler with no abort
//   handler attached ends the process (uWS terminates when a handler returns unanswered).
//
// So a write that can be large goes in pieces, each in a cork of its own (which starts empty
// when we open it) with room left for the chunk's size line. A body stays one res.end: the
// alternative, tryEnd, leaves the answer pending while it goes, and uWS closes a connection
// whose next pipelined request arrives meanwhile. The kernel refuses the head only when a
// client sent this request before reading the answers before it; a large body therefore
// always has an abort handler, so the worst that client sees is its connection closed.
import type { HttpResponse } from './uws.js'

/** The cork buffer of uWebSockets.js (LoopData::CORK_BUFFER_SIZE). */
const CORK_BYTES = 16 * 1024

/**
 * The most bytes one chunked write carries: leaves room in the cork buffer for the chunk's
 * size line and, on a stream's first write, the head (status line and headers, well under
 * 4 KiB: no header we write carries a body).
 */
export const PIECE_BYTES = 12 * 1024

/**
 * A body larger than this can overflow the cork buffer beside its head: the answer must then
 * have an abort handler (see above).
 */
export const CORKED_BODY_BYTES = CORK_BYTES / 2

/**
 * Writes `text` as chunks of at most PIECE_BYTES, each in a cork of its own. false when uWS
 * now holds some of it back (the client has not taken what came before); uWS learns that a
 * corked write was held back only at the next write, so false can come one write late.
 */
export function writeChunks(res: HttpResponse, text: string): boolean {
  let ok = true
  if (text.length * 3 <= PIECE_BYTES) {
    res.cork(() => {
      ok = res.write(text)
    })
    return ok
  }
  const bytes = Buffer.from(text)
  for (let at = 0; at < bytes.length; at += PIECE_BYTES) {
    const piece = bytes.subarray(at, at + PIECE_BYTES)
    res.cork(() => {
      if (!res.write(piece)) ok = false
    })
  }
  return ok
}
