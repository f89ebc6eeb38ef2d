// A real uWebSockets.js server on a free port, for tests of what goes out on its responses,
// and a response opened as a stream the way the server's streamed routes open one.
import type { Test } from 'tap'
import { type ResponseOut, responseOut } from '../../server/http/stream-out.js'
import { type HttpResponse, uws } from '../../server/http/uws.js'

/** Listens on a free loopback port, closed at the test's end; every GET goes to `answer`. */
export async function uwsServer(t: Test, answer: (res: HttpResponse) => void): Promise<number> {
  let port = 0
  const app = uws.App().get('/*', (res) => {
    res.onAborted(() => {})
    answer(res)
  })
  const listening = await new Promise<unknown>((resolve) =>
    app.listen('127.0.0.1', 0, (s) => {
      port = uws.us_socket_local_port(s)
      resolve(s)
    }),
  )
  t.teardown(() => uws.us_listen_socket_close(listening))
  return port
}

/**
 * `res` as an open stream of `contentType`, its head written; `writer` is what the stream
 * writes through (`res` itself, or a wrapper that watches it).
 */
export function openStream(
  res: HttpResponse,
  contentType: string,
  writer: HttpResponse = res,
): { out: ResponseOut; closed(): boolean } {
  let closed = false
  res.onAborted(() => {
    closed = true
  })
  const out = responseOut(writer, { closed: () => closed, end: () => res.cork(() => res.end()) })
  res.cork(() => res.writeHeader('Content-Type', contentType))
  return { out, closed: () => closed }
}
