// X-Request-Id: a sane incoming one is kept (so a proxy's id follows the request through),
// otherwise a new one: a random per-process prefix and a counter, unique without a syscall.
import { randomBytes } from 'node:crypto'

const SANE = /^[A-Za-z0-9._:@/+=-]{1,128}$/
const prefix = randomBytes(6).toString('base64url')
let counter = 0

export function requestId(incoming: string): string {
  if (incoming !== '' && incoming.length <= 128 && SANE.test(incoming)) return incoming
  return `${prefix}-${(++counter).toString(36)}`
}
