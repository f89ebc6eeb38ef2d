// An answer's body that the client cannot take at once is held here, not inside
// uWebSockets.js, and sent as the client reads.
//
// res.end(body) gives uWS whatever the kernel does not take, and uWS keeps it in a buffer of
// the connection's with no bound. A client that pipelines requests and never reads then makes
// the server keep every answer: one connection took the process past 11 GB, and /healthz went
// unanswered for over a minute. res.tryEnd writes only what the kernel takes and says so; the
// rest is held here, and goes out on the connection's writable events.
//
// While a body is held its answer is pending, and uWS closes a connection whose next request
// arrives meanwhile (as it already did behind any answer given later: a write's, or any
// answer on Redis), or that takes none of it for 10 s. So a connection holds at most one
// answer, plus what uWS corked for it in one packet (16 KiB). An answer without a body
// (HEAD, 204, 304) has no write that could say the client is not reading; uWS keeps its head
// however many come (docs/deployment.md, "What the proxy covers").
//
// tryEnd's write of the body is optional, which also keeps it clear of this build's cork
// fault (cork-room.ts): a write uWS did not make is reported as not made, and made here later.
import type { HttpResponse } from './uws.js'

/**
 * Ends `res` with `body` (`bytes` long, its Content-Length), holding what the kernel does not
 * take until the client reads it. The caller has written the status and headers, and
 * attached an abort handler (uWS requires one while the answer is pending). An answer that
 * closes its connection (`close`) goes by res.end, as tryEnd cannot close: its body is not
 * held, and the cork fault can still lose it.
 */
export function endBody(
  res: HttpResponse,
  body: string | Buffer,
  close = false,
  bytes = typeof body === 'string' ? Buffer.byteLength(body) : body.length,
): void {
  if (close) {
    res.end(body, true)
    return
  }
  if (res.tryEnd(body, bytes)[1]) return
  const held = typeof body === 'string' ? Buffer.from(body) : body
  // `offset` is how much of the body uWS has sent: the rest is tried again from there.
  res.onWritable((offset) => res.tryEnd(held.subarray(offset), bytes)[0])
}
