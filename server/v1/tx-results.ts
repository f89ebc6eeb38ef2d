// Transaction results as JSON text, written by hand so a value's text goes out exactly as it
// was stored (big integers, member order, escapes) without a parse and re-serialise.
import type { TxResult } from '../store/types.js'
import { expirySeconds } from '../wire/expiry.js'

export function resultText(r: TxResult): string {
  const o = r as Record<string, unknown>
  if ('found' in o) {
    if (!o.found) return '{"found":false}'
    let s = `{"found":true,"value":${(o.value as Buffer).toString('utf8')},"version":"${o.version}"`
    if (o.expiresAt !== undefined) s += `,"expiresAt":${expirySeconds(o.expiresAt as number)}`
    if (o.metadata !== undefined)
      s += `,"metadata":${o.metadata === null ? 'null' : (o.metadata as Buffer).toString('utf8')}`
    return `${s}}`
  }
  if ('created' in o && !('value' in o)) return `{"created":${o.created},"version":"${o.version}"}`
  if ('deleted' in o) return `{"deleted":${o.deleted}}`
  if ('value' in o) return `{"value":${o.value},"version":"${o.version}"}`
  return '{}'
}
