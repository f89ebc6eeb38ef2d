// A known mix of /v1 requests, and what GET /usage must then report for it, tallied from the
// answers as they came (a 429 counts apart, an error counts once, a transaction counts its
// ops, a namespace's requests only when it exists). `usage` requests are left out of the
// comparison: each report counts itself once answered, so reading the figures changes them.
import type { Client, Res } from '../server/contract/http.js'

export interface Tally {
  requests: number
  errors: number
  rateLimited: number
  operations: Record<string, number>
  namespaces: Record<string, { requests: number; operations: Record<string, number> }>
}

export function newTally(): Tally {
  return { requests: 0, errors: 0, rateLimited: 0, operations: {}, namespaces: {} }
}

const bump = (m: Record<string, number>, k: string, n: number) => {
  m[k] = (m[k] ?? 0) + n
}

/** Counts one answer as the server must: `ns` is the namespace it counts to, if any. */
export function count(t: Tally, res: Res, op: string, ns = '', n = 1): Res {
  if (res.status === 429) {
    t.rateLimited++
    return res
  }
  t.requests += n
  bump(t.operations, op, n)
  if (res.status >= 400) t.errors++
  if (ns !== '') {
    t.namespaces[ns] ??= { requests: 0, operations: {} }
    const row = t.namespaces[ns]
    row.requests += n
    bump(row.operations, op, n)
  }
  return res
}

/**
 * Sends the mix, spreading the requests over the clients in turn (front ends of one
 * account), to namespaces `a` and `b` (made here) and `gone` (made and deleted).
 */
export async function sendMix(tally: Tally, clients: Client[]): Promise<void> {
  let i = 0
  const c = () => clients[i++ % clients.length]!
  count(tally, await c().post('/namespaces', { name: 'a' }), 'namespace', 'a')
  count(tally, await c().post('/namespaces', { name: 'b' }), 'namespace', 'b')
  count(tally, await c().post('/namespaces', { name: 'a' }), 'namespace', 'a') // 409
  count(tally, await c().post('/namespaces', { name: 'gone' }), 'namespace', 'gone')
  for (let k = 0; k < 3; k++) count(tally, await c().put(`/a/k${k}`, { value: k }), 'put', 'a')
  count(tally, await c().put('/a/bad', '{"value":'), 'put', 'a') // 400
  count(tally, await c().get('/a/k1'), 'get', 'a')
  count(tally, await c().get('/a/missing'), 'get', 'a') // 404
  count(tally, await c().get('/a?prefix=k'), 'list', 'a')
  count(tally, await c().del('/a/k2'), 'delete', 'a')
  count(tally, await c().req('PATCH', '/b/n', { body: { increment: 2 } }), 'patch', 'b')
  const ops = [
    { op: 'put', key: 'x', value: 1 },
    { op: 'get', key: 'n' },
    { op: 'increment', key: 'n', by: 1 },
  ]
  count(tally, await c().post('/b', { ops }), 'transaction', 'b', ops.length)
  count(tally, await c().del('/b?prefix=x'), 'deletePrefix', 'b')
  count(tally, await c().get('/nowhere/k'), 'get') // 404: no such namespace, counted to none
  count(tally, await c().get('/namespaces'), 'namespace')
  count(tally, await c().del('/namespaces/gone'), 'namespace', 'gone')
  const refused = await c().get('/a/k0', { key: 'not-a-key' })
  if (refused.status !== 401) throw new Error(`a wrong key: ${refused.status}`) // counted nowhere
}

/** The figures a report gives, without its `usage` requests (see above). */
export function withoutUsage(f: {
  requests: number
  errors: number
  rateLimited: number
  operations: Record<string, number>
}) {
  const operations: Record<string, number> = {}
  for (const [op, n] of Object.entries(f.operations))
    if (op !== 'usage' && n !== 0) operations[op] = n
  return {
    requests: f.requests - (f.operations.usage ?? 0),
    errors: f.errors,
    rateLimited: f.rateLimited,
    operations,
  }
}

/** The tally's totals in the same shape. */
export function expected(t: Tally) {
  return withoutUsage(t)
}

/** The tally's namespaces, without those deleted since (a report lists the ones there). */
export function expectedNamespaces(t: Tally, deleted: string[]) {
  const out = { ...t.namespaces }
  for (const name of deleted) delete out[name]
  return out
}

/** A report's hours summed (the account is newer than the 48 hours). */
export function sumHours(hours: any[]) {
  const s = { requests: 0, errors: 0, rateLimited: 0, operations: {} as Record<string, number> }
  for (const h of hours) {
    s.requests += h.requests
    s.errors += h.errors
    s.rateLimited += h.rateLimited
    for (const [op, n] of Object.entries(h.operations as Record<string, number>))
      bump(s.operations, op, n)
  }
  return withoutUsage(s)
}

/** The report's namespaces that have requests, as the tally holds them (those still there). */
export function namespacesOf(rows: any[]) {
  const out: Record<string, { requests: number; operations: Record<string, number> }> = {}
  for (const r of rows) {
    const operations: Record<string, number> = {}
    for (const [op, n] of Object.entries(r.today.operations as Record<string, number>))
      if (n !== 0) operations[op] = n
    out[r.name] = { requests: r.today.requests, operations }
  }
  return out
}
