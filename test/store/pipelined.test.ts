// Pipelined requests on Redis, over raw sockets. Every request on Redis is answered later,
// and uWebSockets.js closes a connection whose next request it parses while an answer is
// still pending (it supports pipelining only of answers given at once). So requests
// pipelined in one packet are refused whole, nothing applied; requests in later packets wait
// in the paused socket and are answered in order (docs/deployment.md).
import t from 'tap'
import { serverOnCluster } from '../helpers/cluster-server.js'
import { exchange as rawExchange } from '../helpers/raw-exchange.js'

const on = await serverOnCluster(t)
if (on) {
  const { srv, made, api } = on
  await api.createNamespace('f')
  const key = made.apiKey

  /** Sends the pieces `gapMs` apart on one socket; what came back once the socket closed or `answers` came. */
  const exchange = (pieces: string[], gapMs: number, answers: number) =>
    rawExchange(srv.port, pieces, gapMs, 15_000, answers)
  const put = (k: string, body: string) =>
    `PUT /v1/f/${k} HTTP/1.1\r\nHost: x\r\nx-api-key: ${key}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  const stored = async (k: string) => (await api.get(`/f/${k}`)).status === 200

  t.test('PUTs pipelined in one packet: refused whole, neither applied', async (t) => {
    const r = await exchange([put('p1', '{"value":1}') + put('p2', '{"value":2}')], 0, 2)
    t.same(r.statuses, [], 'no answer')
    t.ok(r.closed, 'the connection closed')
    t.notOk(await stored('p1'), 'the first write was not applied')
    t.notOk(await stored('p2'), 'nor the second')
  })

  t.test('GETs pipelined in one packet: refused whole too', async (t) => {
    await api.put('/f/r', { value: 'read me' })
    const get = `GET /v1/f/r HTTP/1.1\r\nHost: x\r\nx-api-key: ${key}\r\n\r\n`
    const r = await exchange([get + get], 0, 2)
    t.same(r.statuses, [], 'no answer')
    t.ok(r.closed, 'the connection closed')
  })

  t.test('PUTs pipelined in later packets: answered in order, each applied once', async (t) => {
    // 50 ms apart, each is read after the one before paused the connection. A busy machine
    // may still read two at once: the one-packet case, refused whole.
    const r = await exchange(
      [put('l1', '{"value":1}'), put('l2', '{"value":2}'), put('l3', '{"value":3}')],
      50,
      3,
    )
    const applied = [await stored('l1'), await stored('l2'), await stored('l3')]
    t.comment(`answers: ${JSON.stringify(r.statuses)}, applied: ${JSON.stringify(applied)}`)
    t.same(
      r.statuses,
      r.statuses.map(() => 201),
      'every answer a 201, in order',
    )
    t.same(
      applied,
      applied.map((_, i) => i < r.statuses.length),
      'exactly the answered writes applied',
    )
  })
}
