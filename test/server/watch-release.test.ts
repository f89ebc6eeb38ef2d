// A watch its client left costs the server nothing: watchers that go away without a word
// (their sockets dropped, as when their process is killed), on Server-Sent Events and on
// WebSockets, and watchers closed by the server for being too slow, all leave the server's
// count of open watches (`cairn_watches_open` in /metrics), which is what every write fans
// out to. A real server on a real port.
import http from 'node:http'
import net from 'node:net'
import t from 'tap'
import WebSocket from 'ws'
import { startServer } from '../helpers/server.js'
import { plan } from '../helpers/plans.js'
import { Client } from './contract/http.js'

const srv = await startServer({
  plans: { plans: [plan({ id: 'free', maxWatches: null })], default: 'free', upgradeUrl: null },
})
t.teardown(() => srv.stop())
const acct = await srv.createAccount()
const api = new Client(srv.baseUrl, acct.apiKey)
await api.createNamespace('w')
const url = new URL(srv.baseUrl)

async function openWatches(): Promise<number> {
  const text = await (await fetch(`${srv.url}/metrics`)).text()
  return Number(/^cairn_watches_open (\d+)$/m.exec(text)?.[1] ?? Number.NaN)
}

/** Reads the count until it is `n` (or gives up after a while and returns what it saw). */
async function countBecomes(n: number): Promise<number> {
  let seen = await openWatches()
  for (let i = 0; i < 300 && seen !== n; i++) {
    await new Promise((r) => setTimeout(r, 50))
    seen = await openWatches()
  }
  return seen
}

/** An SSE watch of the namespace, once its first event came; resolves with its request. */
function sse(): Promise<http.ClientRequest> {
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: url.hostname,
      port: url.port,
      path: `${url.pathname}/w?watch=1`,
      headers: { 'x-api-key': acct.apiKey, accept: 'text/event-stream' },
      agent: false,
    })
    req.on('response', (res) => {
      if (res.statusCode !== 200) return reject(new Error(`watch: ${res.statusCode}`))
      res.once('data', () => resolve(req))
      res.on('error', () => {})
    })
    req.on('error', () => {})
    req.end()
  })
}

/** A WebSocket watch of the namespace, once its first message came. */
function ws(): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const sock = new WebSocket(`${srv.baseUrl.replace(/^http/, 'ws')}/w?watch=1`, {
      headers: { 'x-api-key': acct.apiKey },
    })
    sock.once('message', () => resolve(sock))
    sock.once('error', reject)
  })
}

t.test('watchers whose sockets drop leave the count', async (t) => {
  t.equal(await openWatches(), 0, 'none open before')
  const streams = await Promise.all(Array.from({ length: 40 }, sse))
  const sockets = await Promise.all(Array.from({ length: 10 }, ws))
  t.equal(await openWatches(), 50, 'each counted once open')
  for (let i = 0; i < 20; i++) await api.mustPut('w', `k${i % 5}`, i)
  // Gone without a word: no close frame, no end of the request.
  for (const req of streams) req.socket?.destroy()
  for (const s of sockets) s.terminate()
  t.equal(await countBecomes(0), 0, 'every one left the count')
  for (let i = 0; i < 20; i++) await api.mustPut('w', `k${i % 5}`, i)
  t.equal(await openWatches(), 0, 'and writes after them bring none back')
})

t.test('watchers closed as too slow leave the count', async (t) => {
  // Clients that send the request and then read nothing, their sockets left open.
  const socks = await Promise.all(
    Array.from(
      { length: 5 },
      () =>
        new Promise<net.Socket>((resolve) => {
          const sock = net.connect(Number(url.port), url.hostname, () => {
            sock.write(
              `GET ${url.pathname}/w?watch=1 HTTP/1.1\r\nHost: x\r\nx-api-key: ${acct.apiKey}\r\naccept: text/event-stream\r\n\r\n`,
            )
            sock.pause()
            resolve(sock)
          })
        }),
    ),
  )
  t.teardown(() => {
    for (const s of socks) s.destroy()
  })
  t.equal(await countBecomes(5), 5, 'each counted once open')
  const big = 'x'.repeat(512 * 1024)
  for (let i = 0; i < 60; i++) await api.mustPut('w', `big${i % 3}`, big)
  t.equal(await countBecomes(0), 0, 'each left the count when it was closed as too slow')
})
