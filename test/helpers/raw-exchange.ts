// One exchange over a raw socket, for the framing tests that send what an HTTP client would
// not (pipelined requests, pieces apart): the bytes that came back, whether the server closed
// the socket, and the statuses of the answers in order.
import net from 'node:net'

export interface Exchanged {
  text: string
  closed: boolean
  statuses: number[]
}

/**
 * Sends the pieces (`gapMs` apart) on one socket to `port`; resolves once `answers` responses
 * arrived, the server closed the socket, or `waitMs` passed (a generous bound, not a timing
 * assertion: a busy machine only makes it slower to resolve).
 */
export function exchange(
  port: number,
  pieces: string[],
  gapMs = 0,
  waitMs = 10_000,
  answers = Number.POSITIVE_INFINITY,
): Promise<Exchanged> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1')
    let text = ''
    let closed = false
    let done = false
    const statuses = () => [...text.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1]))
    const finish = () => {
      if (done) return
      done = true
      clearTimeout(timer)
      s.destroy()
      resolve({ text, closed, statuses: statuses() })
    }
    const timer = setTimeout(finish, waitMs)
    s.on('data', (d) => {
      text += d.toString('latin1')
      // A complete answer ends with its JSON body; wait a moment for the body's last bytes.
      if (statuses().length >= answers) setTimeout(finish, 50)
    })
    s.on('close', () => {
      closed = true
      finish()
    })
    s.on('error', () => {})
    ;(async () => {
      for (const p of pieces) {
        s.write(p)
        if (gapMs) await new Promise((r) => setTimeout(r, gapMs))
      }
    })()
  })
}
