// /upstash/{namespace} URLs: the command route, /pipeline, /multi-exec, and the path form
// (`/upstash/{namespace}/set/k/v`).

export type Kind = 'command' | 'pipeline' | 'multi' | 'path'

export interface UpstashPath {
  ns: string
  kind: Kind
  /** The path form's segments, still percent-encoded. */
  rest: string
}

const PREFIX = '/upstash/'

/** The parsed URL, or undefined for one that is not an /upstash route. */
export function parseUpstashPath(url: string): UpstashPath | undefined {
  if (!url.startsWith(PREFIX)) return undefined
  const slash = url.indexOf('/', PREFIX.length)
  const ns = slash < 0 ? url.slice(PREFIX.length) : url.slice(PREFIX.length, slash)
  if (ns === '') return undefined
  const rest = slash < 0 ? '' : url.slice(slash + 1)
  if (rest === '') return { ns, kind: 'command', rest }
  if (rest === 'pipeline') return { ns, kind: 'pipeline', rest }
  if (rest === 'multi-exec') return { ns, kind: 'multi', rest }
  return { ns, kind: 'path', rest }
}

/** The methods each kind of route takes, as an Allow header lists them. */
export const ALLOW: Record<Kind, string> = {
  command: 'POST',
  pipeline: 'POST',
  multi: 'POST',
  path: 'GET, POST',
}
