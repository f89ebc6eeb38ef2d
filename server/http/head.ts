// HEAD answers: the status and headers GET would have, and the body's length, never the body
// (a client reads a body it did not expect as the next answer on the connection).

import type { HttpResponse } from './uws.js'

/**
 * Ends a HEAD answer whose head is written. The length goes in by hand: this build of
 * uWebSockets.js never ends a response given endWithoutBody(length), and the process aborts.
 */
export function endHead(res: HttpResponse, bodyBytes: number): void {
  res.writeHeader('Content-Length', String(bodyBytes))
  res.endWithoutBody()
}
