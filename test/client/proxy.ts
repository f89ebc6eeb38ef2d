// A small HTTP forwarder standing in for a load balancer in front of a real server: it can
// answer the next few requests itself with an HTML page and a status of its choosing (a
// gateway's 502/503/504 or 429, a captive portal's 200) and counts every request it sees,
// so retry behaviour is observable end to end.
import http from 'node:http'
import type { AddressInfo } from 'node:net'

export interface Proxy {
  url: string
  /** Requests seen, by method. */
  seen: { method: string; url: string }[]
  /** Answer the next `n` requests with `status` and an HTML body instead of forwarding them. */
  failNext(n: number, status: number, headers?: Record<string, string>): void
  close(): Promise<void>
}

export async function startProxy(target: string): Promise<Proxy> {
  const to = new URL(target)
  let failures = 0
  let failStatus = 502
  let failHeaders: Record<string, string> = {}
  const seen: { method: string; url: string }[] = []
  const srv = http.createServer((req, res) => {
    seen.push({ method: req.method ?? '', url: req.url ?? '' })
    if (failures > 0) {
      failures--
      req.resume()
      res.writeHead(failStatus, { 'content-type': 'text/html', ...failHeaders })
      res.end(`<html><body>${failStatus} from the gateway</body></html>`)
      return
    }
    const up = http.request(
      { host: to.hostname, port: to.port, method: req.method, path: req.url, headers: req.headers },
      (upRes) => {
        res.writeHead(upRes.statusCode ?? 502, upRes.headers)
        upRes.pipe(res)
      },
    )
    up.on('error', () => {
      res.writeHead(502)
      res.end()
    })
    req.pipe(up)
  })
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve))
  const port = (srv.address() as AddressInfo).port
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    failNext(n, status, headers = {}) {
      failures = n
      failStatus = status
      failHeaders = headers
    },
    close: () =>
      new Promise<void>((resolve) => {
        srv.closeAllConnections()
        srv.close(() => resolve())
      }),
  }
}
