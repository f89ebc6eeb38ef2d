// A crowd of watchers for bench:http, run as its own process (pinned beside wrk, off the
// server's core): N Server-Sent Event streams on one namespace, counting the events they are
// delivered and, for the probe key, how long each took from the write (the probe's value is
// the time it was sent, in ms since the epoch). It prints its figures as JSON for each line
// it reads on stdin, and stops when stdin closes.
//   node bench/http/watchers.ts <base url> <api key> <namespace> <watchers>
import http from 'node:http'

const [base, apiKey, ns, countText] = process.argv.slice(2)
const count = Number(countText)
const url = new URL(base!)
const ID = Buffer.from('\nid: ')
const PROBE = Buffer.from('"key":"probe"')
let events = 0
let ready = 0
const lags: number[] = []

function watch(): void {
  const req = http.request({
    host: url.hostname,
    port: url.port,
    path: `/v1/${ns}?watch=1`,
    headers: { 'x-api-key': apiKey, accept: 'text/event-stream' },
    agent: false,
  })
  req.on('response', (res) => {
    if (res.statusCode !== 200) {
      process.stderr.write(`watchers: ${res.statusCode}\n`)
      process.exit(1)
    }
    ready++
    // Events are counted by their `id:` lines, searched in the bytes as they come: this process
    // shares its core with wrk, so it must cost as little as it can. Only the probe's events
    // are read. The tail of each chunk is kept so nothing split across chunks is missed.
    let tail = Buffer.alloc(0)
    res.on('data', (chunk: Buffer) => {
      const buf = tail.length ? Buffer.concat([tail, chunk]) : chunk
      let from = tail.length > 0 ? Math.max(0, tail.length - ID.length + 1) : 0
      for (let i = buf.indexOf(ID, from); i >= 0; i = buf.indexOf(ID, i + ID.length)) events++
      from = tail.length > 0 ? Math.max(0, tail.length - PROBE.length + 1) : 0
      for (let i = buf.indexOf(PROBE, from); i >= 0; i = buf.indexOf(PROBE, i + PROBE.length)) {
        const end = buf.indexOf(0x7d, i)
        if (end < 0) break
        const m = /"value":(\d+)/.exec(buf.toString('latin1', i, end))
        if (m) lags.push(Date.now() - Number(m[1]))
      }
      tail = Buffer.from(buf.subarray(Math.max(0, buf.length - 256)))
    })
  })
  req.end()
}

for (let i = 0; i < count; i++) watch()
const started = setInterval(() => {
  if (ready === count) {
    clearInterval(started)
    process.stdout.write('ready\n')
  }
}, 10)
// Each line on stdin asks for the figures so far; the lags are those since the last ask.
process.stdin.setEncoding('utf8')
process.stdin.on('data', () => {
  lags.sort((a, b) => a - b)
  const q = (p: number) =>
    lags.length ? lags[Math.min(lags.length - 1, Math.floor(p * lags.length))]! : 0
  process.stdout.write(
    `${JSON.stringify({ events, probes: lags.length, p50: q(0.5), p99: q(0.99) })}\n`,
  )
  lags.length = 0
})
process.stdin.on('end', () => process.exit(0))
