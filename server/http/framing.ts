// What uWebSockets.js does not check in a request's framing, checked before a body is read.
// uWebSockets.js frames a body by the first Content-Length alone; a request with another one
// is ambiguous (a proxy in front may have framed it by the other: request smuggling), so it
// is refused before anything is applied. docs/deployment.md lists what only a proxy covers.
import type { HttpRequest } from './uws.js'

/** Why a body's framing is ambiguous (repeated Content-Length, odd Transfer-Encoding), or ''. */
export function bodyFraming(req: HttpRequest): string {
  let lengths = 0
  let problem = ''
  req.forEach((name, value) => {
    if (name === 'content-length' && ++lengths > 1)
      problem = 'The request has more than one Content-Length header.'
    else if (name === 'transfer-encoding' && value.trim().toLowerCase() !== 'chunked')
      problem = 'Transfer-Encoding other than chunked is not accepted.'
  })
  return problem
}
