// Turning a /v1 URL into a route and a key. The key is everything after `/{namespace}/`,
// percent-decoded as UTF-8; `/` and `%2F` are the same character. uWebSockets.js hands us
// the raw path, so `%2F`, `.` segments and bad escapes arrive here untouched.

export enum Route {
  NotFound,
  Namespaces,
  Namespace,
  Usage,
  OpenApi,
  Keys,
  Entry,
}

export interface Parsed {
  route: Route
  /** The namespace name for Namespace, Keys and Entry routes (raw, not decoded). */
  ns: string
  /** The raw key text for Entry. */
  rawKey: string
}

/** Parses the path after `/v1`; `out` is filled and returned. */
export function parsePath(url: string, out: Parsed): Parsed {
  out.ns = ''
  out.rawKey = ''
  // url starts with '/v1'
  if (url.length <= 4 || url.charCodeAt(3) !== 47) {
    out.route = Route.NotFound
    return out
  }
  const slash = url.indexOf('/', 4)
  const first = slash < 0 ? url.slice(4) : url.slice(4, slash)
  if (first === '') {
    out.route = Route.NotFound
    return out
  }
  if (slash < 0) {
    if (first === 'namespaces') out.route = Route.Namespaces
    else if (first === 'usage') out.route = Route.Usage
    else if (first === 'openapi.json') out.route = Route.OpenApi
    else {
      out.route = Route.Keys
      out.ns = first
    }
    return out
  }
  const rest = url.slice(slash + 1)
  if (first === 'namespaces') {
    if (rest === '' || rest.indexOf('/') >= 0) out.route = Route.NotFound
    else {
      out.route = Route.Namespace
      out.ns = rest
    }
    return out
  }
  if (first === 'usage' || first === 'openapi.json') {
    out.route = Route.NotFound
    return out
  }
  out.route = Route.Entry
  out.ns = first
  out.rawKey = rest
  return out
}
