// The client's address: the socket's peer, or with --trust-proxy the address the proxy put
// last in X-Forwarded-For (earlier entries came from the client and prove nothing).
import type { HttpRequest, HttpResponse } from './uws.js'

export function clientAddress(
  res: HttpResponse,
  forwardedFor: string,
  trustProxy: boolean,
): string {
  if (trustProxy && forwardedFor) {
    const last = forwardedFor.slice(forwardedFor.lastIndexOf(',') + 1).trim()
    if (last) return last
  }
  return Buffer.from(res.getRemoteAddressAsText()).toString()
}

export function requestAddress(res: HttpResponse, req: HttpRequest, trustProxy: boolean): string {
  return clientAddress(res, trustProxy ? req.getHeader('x-forwarded-for') : '', trustProxy)
}
