// CORS for /v1: browsers may call the API with an API key from any allowed origin. No
// credentials are involved (the dashboard's cookie never authorises /v1), so `*` is safe
// as the default.
import type { Config } from '../config.js'

export const EXPOSE =
  'ETag, X-Expires-At, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Retry-After, X-Request-Id, Upstash-Sync-Token'
export const ALLOW_HEADERS =
  'x-api-key, authorization, content-type, if-match, if-none-match, x-request-id'
export const MAX_AGE = '86400'

/** The Access-Control-Allow-Origin value for an Origin header, or '' for none. */
export function allowOrigin(config: Config, origin: string): string {
  if (origin === '') return ''
  if (config.corsOrigins === '*') return '*'
  return config.corsOrigins.includes(origin) ? origin : ''
}
