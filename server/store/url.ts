// Store URLs: which strings name Redis, and how one is shown without its password.
export function isRedisUrl(s: string | undefined): s is string {
  return s !== undefined && /^rediss?:\/\//.test(s)
}

/** The URL without its password, for messages and logs. */
export function redact(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//***@')
}
