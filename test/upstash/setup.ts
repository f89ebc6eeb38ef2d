// A real server for one test file, an account with a namespace, and the real @upstash/redis
// client pointed at /upstash/{namespace} with its defaults (auto-pipelining, base64 answers).
import { Redis } from '@upstash/redis'
import { Client } from '../server/contract/http.js'
import { plansFile, setup } from '../server/contract/setup.js'

interface Tap {
  teardown(fn: () => unknown): void
}

let seq = 0

export async function upstashSetup(t: Tap, opts: { plans?: object } = {}) {
  const { srv, api, email, accountId } = await setup(t, { plans: opts.plans ?? plansFile() })
  /** A fresh namespace and a client on it (`token`: another key than the account's first). */
  const database = async (token = api.key) => {
    const ns = `db${++seq}`
    await api.createNamespace(ns)
    return { ns, redis: redisFor(srv.url, ns, token) }
  }
  return { srv, api, email, accountId, database }
}

export function redisFor(base: string, ns: string, token: string, opts: object = {}): Redis {
  return new Redis({ url: `${base}/upstash/${ns}`, token, retry: false, ...opts })
}

/** A raw request to /upstash/{ns}[/rest], as the client would send it. */
export async function raw(
  base: string,
  path: string,
  token: string | null,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string; json: any; headers: Headers }> {
  const h: Record<string, string> = { 'content-type': 'application/json', ...headers }
  if (token !== null) h.authorization = `Bearer ${token}`
  const res = await fetch(`${base}/upstash/${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: h,
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  })
  const text = await res.text()
  let json: any
  try {
    json = JSON.parse(text)
  } catch {}
  return { status: res.status, text, json, headers: res.headers }
}

export { Client }
