// The ceiling: a bare uWebSockets.js app answering every request with the same 20-byte JSON
// body. Nothing a real service does can be faster on this machine.
import { uws } from '../../server/http/uws.js'

const BODY = '{"value":"12345678"}' // 20 bytes
uws
  .App()
  .any('/*', (res) => {
    res.writeHeader('Content-Type', 'application/json').end(BODY)
  })
  .listen('127.0.0.1', 0, (socket) => {
    if (!socket) process.exit(1)
    process.stdout.write(`port ${uws.us_socket_local_port(socket)}\n`)
  })
