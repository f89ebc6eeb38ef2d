// The Server-Sent Events sink over a real uWebSockets.js response: what uWS holds back when
// the client is slow must reach the client once it reads, with nothing more written.
import net from 'node:net'
import t, { type Test } from 'tap'
import type { ResponseOut } from '../../server/http/stream-out.js'
import { SseSink } from '../../server/http/watch-sse.js'
import { dechunkAnswer } from '../helpers/chunked.js'
import { openStream, uwsServer } from '../helpers/uws-stream.js'

/**
 * A real uWS server whose GET opens a stream and hands it to `fill`, and a client that has
 * sent one GET and not read for a while: the kernel's buffers fill and uWS keeps the rest.
 */
async function slowClient(t: Test, fill: (out: ResponseOut) => void): Promise<net.Socket> {
  const port = await uwsServer(t, (res) => fill(openStream(res, 'text/event-stream').out))
  const sock = net.connect(port, '127.0.0.1')
  t.teardown(() => sock.destroy())
  await new Promise((r) => sock.once('connect', r))
  sock.pause()
  sock.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n')
  await new Promise((r) => setTimeout(r, 400))
  return sock
}

t.test(
  'events the socket could not take at once all arrive, with nothing written after',
  async (t) => {
    const sink = new SseSink()
    const data = JSON.stringify('z'.repeat(64 * 1024))
    const EVENTS = 128 // 8 MiB: more than the kernel's buffers hold for a client not reading
    const sock = await slowClient(t, (out) => {
      sink.attach(out)
      for (let i = 1; i <= EVENTS; i++) sink.event('put', data, i)
      // More than a live watch may owe (too_slow), which the session would act on; the sink
      // itself still holds it all for the client.
      sink.flush()
    })
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

t.test('a large write while uWS still holds back the one before loses nothing', async (t) => {
  // The history of a watch goes out in slices of 256 KiB, written while uWS may still hold
  // back the ones before: each must arrive whole, in chunks a client can parse.
  const slice = (n: number) =>
    `event: put\nid: ${n}\ndata: ${JSON.stringify(String(n).repeat(50_000))}\n\n`
  const texts = [1, 2, 3, 4, 5, 6].map(slice)
  const sock = await slowClient(t, (out) => {
    out.write(':'.repeat(4 * 1024 * 1024)) // more than the kernel's buffers hold: uWS keeps some
    for (const text of texts) out.write(text)
    out.end()
  })
  const chunks: Buffer[] = []
  // Until the last chunk (the connection stays open for the next request).
  const ended = new Promise<void>((resolve) =>
    sock.on('data', (c) => {
      chunks.push(c)
      if (Buffer.concat(chunks.slice(-2)).toString('latin1').endsWith('\r\n0\r\n\r\n')) resolve()
    }),
  )
  sock.resume()
  await ended
  const raw = Buffer.concat(chunks)
  const body = dechunkAnswer(raw).body.toString('utf8')
  t.equal(body.length, 4 * 1024 * 1024 + texts.join('').length, 'every byte written arrived')
  t.ok(body.endsWith(texts.join('')), 'in the order written')
})

t.test('a stream stays open after uWS moved on bytes the sink was not told it held', async (t) => {
  // uWS tells a writer that it held back a corked piece only at the next write; when it then
  // moves the bytes on with no writable handler registered, it closes the connection 10 s
  // later. The filler is written past the sink, as a held-back piece it never heard of.
  const sink = new SseSink()
  let later: (() => void) | undefined
  const sock = await slowClient(t, (out) => {
    sink.attach(out)
    out.write(':'.repeat(4 * 1024 * 1024))
    later = () => {
      sink.event('put', '"late"', 2)
      sink.flush()
    }
  })
  let text = ''
  let closed = false
  sock.on('data', (c) => {
    text += c.toString('latin1')
  })
  sock.on('close', () => {
    closed = true
  })
  sock.resume()
  const started = Date.now()
  while (text.length < 4 * 1024 * 1024 && Date.now() - started < 5000)
    await new Promise((r) => setTimeout(r, 20))
  t.ok(text.length >= 4 * 1024 * 1024, 'the client took the filler')
  // Past uWS's 10 s idle timeout and its 4 s granularity.
  await new Promise((r) => setTimeout(r, 16_000))
  t.notOk(closed, 'the connection is still open')
  later!()
  const waited = Date.now()
  while (!text.includes('data: "late"') && !closed && Date.now() - waited < 3000)
    await new Promise((r) => setTimeout(r, 20))
  t.ok(text.includes('event: put\nid: 2\ndata: "late"\n\n'), 'and an event written after arrives')
  sink.end()
})
