// Writes through uWebSockets.js that fit its cork buffer (server/http/cork-room.ts). This build
// drops a corked write that overflows the cork buffer when the kernel cannot take what is
// already corked; a watch lost a 256 KiB slice of events that way under load. The first and
// last tests hold the rules that avoid it (no write that can overflow, none inside the
// request's own cork); the second streams a watch's worth of bytes to a client that reads in
// bursts and checks every byte arrives.
import net from 'node:net'
import t from 'tap'
import { PIECE_BYTES } from '../../server/http/cork-room.js'
import type { HttpResponse } from '../../server/http/uws.js'
import { dechunkAnswer } from '../helpers/chunked.js'
import { openStream, uwsServer as serve } from '../helpers/uws-stream.js'

/** `res`, noting the size of each write it is given. */
function noting(res: HttpResponse, sizes: number[]): HttpResponse {
  return new Proxy(res, {
    get(target, name) {
      const fn = Reflect.get(target, name) as unknown
      if (typeof fn !== 'function') return fn
      if (name === 'write')
        return (x: string | Uint8Array) => {
          sizes.push(typeof x === 'string' ? Buffer.byteLength(x) : x.byteLength)
          return target.write(x)
        }
      return (fn as (...a: unknown[]) => unknown).bind(target)
    },
  })
}

/** Sends `request` and reads the answer in short bursts with pauses, until `done(raw)`. */
async function readSlowly(
  port: number,
  request: string,
  done: (tail: Buffer, size: number) => boolean,
): Promise<Buffer> {
  const sock = net.connect(port, '127.0.0.1')
  const chunks: Buffer[] = []
  let size = 0
  let tail = Buffer.alloc(0)
  const finished = new Promise<void>((resolve, reject) => {
    sock.on('data', (c) => {
      chunks.push(c)
      size += c.length
      tail = Buffer.concat([tail, c]).subarray(-64)
      if (done(tail, size)) resolve()
    })
    sock.on('error', reject)
    sock.on('close', () => reject(new Error(`closed after ${size} bytes`)))
  })
  sock.write(request)
  let reading = true
  const burst = () => {
    if (!reading) return
    sock.pause()
    setTimeout(() => {
      sock.resume()
      setTimeout(burst, Math.random() * 3)
    }, Math.random() * 4)
  }
  burst()
  try {
    await finished
  } finally {
    reading = false
    sock.destroy()
  }
  return Buffer.concat(chunks)
}

/** Text whose every byte says where it is: a lost or moved piece shows. */
function counted(from: number, length: number): string {
  let s = ''
  for (let p = from; p < from + length; p++)
    s += String.fromCharCode(97 + ((p * 7 + (p >> 10)) % 26))
  return s
}

const endOfChunks = (raw: Buffer) => raw.toString('latin1').endsWith('\r\n0\r\n\r\n')

t.test('a large write to a stream goes to uWS in pieces that fit its cork buffer', async (t) => {
  const sizes: number[] = []
  const text = `${counted(0, 300_000)}é€😀` // multi-byte characters count as their bytes
  const port = await serve(t, (res) => {
    const { out } = openStream(res, 'text/plain', noting(res, sizes))
    setImmediate(() => {
      out.write(text)
      out.end()
    })
  })
  const raw = await readSlowly(port, 'GET / HTTP/1.1\r\nHost: x\r\n\r\n', endOfChunks)
  const { body, ended } = dechunkAnswer(raw)
  t.ok(ended, 'to the last chunk')
  t.equal(body.toString('utf8'), text, 'every byte arrived, in order')
  t.ok(sizes.length > 20, `in ${sizes.length} writes`)
  t.ok(
    sizes.every((n) => n <= PIECE_BYTES),
    `none over ${PIECE_BYTES} bytes (largest ${Math.max(...sizes)})`,
  )
})

t.test('a watch stream of large flushes reaches a client that reads in bursts whole', async (t) => {
  // As a watch catching up writes: 256 KiB slices, each from a later turn of the event loop,
  // a comment line from onWritable while uWS holds some back (watch-sse.ts).
  const SLICE = 256 * 1024
  const TOTAL = 24 * 1024 * 1024
  const port = await serve(t, (res) => {
    const { out, closed } = openStream(res, 'text/event-stream')
    let at = 0
    const next = () => {
      if (closed()) return
      if (at >= TOTAL) return out.end()
      const text = counted(at, SLICE)
      at += SLICE
      if (out.write(text)) setImmediate(next)
      else
        out.onWritable(() => {
          if (!out.write(':\n')) return
          out.onWritable(() => {})
          setImmediate(next)
        })
    }
    setImmediate(next)
  })
  const raw = await readSlowly(port, 'GET / HTTP/1.1\r\nHost: x\r\n\r\n', endOfChunks)
  const { body: bytes, ended } = dechunkAnswer(raw)
  t.ok(ended, 'to the last chunk')
  const body = bytes.toString('latin1').replaceAll(':\n', '')
  t.equal(body.length, TOTAL, 'every byte arrived')
  t.ok(body === counted(0, TOTAL), 'each where it was written')
})

t.test('what a stream is given inside its request handler waits for the next turn', async (t) => {
  // The handler's cork holds the head: a piece written there shares it with the pieces after.
  const sizes: number[] = []
  let inHandler = -1
  const text = counted(0, 100_000)
  const port = await serve(t, (res) => {
    const { out } = openStream(res, 'text/plain', noting(res, sizes))
    out.write(text)
    out.end()
    inHandler = sizes.length
  })
  const raw = await readSlowly(port, 'GET / HTTP/1.1\r\nHost: x\r\n\r\n', endOfChunks)
  const { body, ended } = dechunkAnswer(raw)
  t.equal(inHandler, 0, 'nothing written in the handler')
  t.ok(ended, 'the stream ended after')
  t.equal(body.toString('latin1'), text, 'with every byte')
})
