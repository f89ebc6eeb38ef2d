// The Server-Sent Events sink over a real uWebSockets.js response: what uWS holds back when
// the client is slow must reach the client once it reads, with nothing more written.
import net from 'node:net'
import t from 'tap'
import { uws } from '../../server/http/uws.js'
import { responseOut } from '../../server/http/stream-out.js'
import { SseSink } from '../../server/v1/watch-sse.js'

t.test(
  'events the socket could not take at once all arrive, with nothing written after',
  async (t) => {
    const sink = new SseSink()
    const data = JSON.stringify('z'.repeat(64 * 1024))
    const EVENTS = 128 // 8 MiB: more than the kernel's buffers hold for a client not reading
    let port = 0
    const app = uws.App().get('/*', (res) => {
      let closed = false
      res.onAborted(() => {
        closed = true
      })
      const out = responseOut(res, {
        closed: () => closed,
        end: () => res.cork(() => res.end()),
      })
      res.cork(() => res.writeHeader('content-type', 'text/event-stream'))
      sink.attach(out)
      for (let i = 1; i <= EVENTS; i++) sink.event('put', data, i)
      // More than a live watch may owe (too_slow), which the session would act on; the sink
      // itself still holds it all for the client.
      sink.flush()
    })
    const listening = await new Promise<unknown>((resolve) =>
      app.listen('127.0.0.1', 0, (s) => {
        port = uws.us_socket_local_port(s)
        resolve(s)
      }),
    )
    t.teardown(() => uws.us_listen_socket_close(listening))
    const sock = net.connect(port, '127.0.0.1')
    t.teardown(() => sock.destroy())
    await new Promise((r) => sock.once('connect', r))
    sock.pause()
    sock.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n')
    // Not read for a while: the kernel's buffers fill and uWS keeps the rest.
    await new Promise((r) => setTimeout(r, 500))
    let text = ''
    sock.on('data', (c) => {
      text += c.toString('latin1')
    })
    sock.resume()
    const lastId = () =>
      Math.max(0, ...[...text.matchAll(/\nid: (\d+)\n/g)].map((m) => Number(m[1])))
    const started = Date.now()
    while (lastId() < EVENTS && Date.now() - started < 5000)
      await new Promise((r) => setTimeout(r, 20))
    t.equal(lastId(), EVENTS, 'the last event arrived')
    t.equal((text.match(/\nevent: put\n/g) ?? []).length, EVENTS, 'and every one before it')
    sink.end()
  },
)
