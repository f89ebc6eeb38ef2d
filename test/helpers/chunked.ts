// HTTP/1.1 chunked framing taken off a body, strictly: a malformed chunk throws, so a stream
// that lost bytes mid-chunk shows as the error it is for a client.

/** The chunks' bytes in `raw` (the body after the head), and whether the last chunk came. */
export function dechunk(raw: Buffer): { body: Buffer; ended: boolean } {
  const parts: Buffer[] = []
  for (let p = 0; ; ) {
    const eol = raw.indexOf('\r\n', p)
    if (eol < 0) return { body: Buffer.concat(parts), ended: false }
    const size = raw.toString('latin1', p, eol)
    if (!/^[0-9a-f]+$/i.test(size))
      throw new Error(`bad chunk size ${JSON.stringify(size.slice(0, 40))} at ${p}`)
    const n = Number.parseInt(size, 16)
    if (n === 0) return { body: Buffer.concat(parts), ended: true }
    if (raw.length < eol + 4 + n) return { body: Buffer.concat(parts), ended: false }
    if (raw.toString('latin1', eol + 2 + n, eol + 4 + n) !== '\r\n')
      throw new Error(`the chunk of ${n} bytes at ${p} is not followed by CRLF`)
    parts.push(raw.subarray(eol + 2, eol + 2 + n))
    p = eol + 4 + n
  }
}

/** dechunk of a whole answer as read off the socket: its head, then its chunked body. */
export function dechunkAnswer(raw: Buffer): { body: Buffer; ended: boolean } {
  return dechunk(raw.subarray(raw.indexOf('\r\n\r\n') + 4))
}
