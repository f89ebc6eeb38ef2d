// cairn-kv, the client package's command line, as a user runs it: the real bin over the
// package's build, against a real server (cairn-kv*.test.ts).
import { execFile, execFileSync } from 'node:child_process'
import path from 'node:path'
import { endsWithTest } from '../helpers/reaper.js'
import { nsName, root, server } from './helpers.js'

export const bin = path.join(root, 'client/bin/cairn-kv.mjs')

export interface Teardowns {
  teardown(fn: () => unknown): void
}

export interface Run {
  code: number
  stdout: string
  stderr: string
}

/** Runs the bin as a user does; the child ends with test `t`, whatever becomes of it. */
export function kvIn(t: Teardowns) {
  return (env: Record<string, string>, args: string[], input?: string): Promise<Run> =>
    new Promise((resolve) => {
      const child = execFile(
        process.execPath,
        [bin, ...args],
        { env: { ...process.env, ...env }, timeout: 60_000 },
        (err, stdout, stderr) =>
          resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      )
      endsWithTest(t, child)
      if (input !== undefined) child.stdin!.end(input)
    })
}

// The bin runs over the package's build, as it is installed.
execFileSync(process.execPath, [path.join(root, 'client/scripts/build.mjs')], { stdio: 'ignore' })

export async function namespace(
  srv: { baseUrl: string },
  apiKey: string,
  name: string,
): Promise<void> {
  const made = await fetch(`${srv.baseUrl}/namespaces`, {
    method: 'POST',
    headers: { 'x-api-key': apiKey, 'content-type': 'application/json' },
    body: JSON.stringify({ name }),
  })
  if (made.status !== 201) throw new Error(`namespace ${name}: ${made.status}`)
}

/** A real server for test `t`, an account on it, its namespace, and the bin pointed at them. */
export async function kvAgainstServer(t: Teardowns, stem: string) {
  const kv = kvIn(t)
  const srv = await server(t)
  const acct = await srv.createAccount()
  const env = { CAIRN_URL: srv.baseUrl, CAIRN_KEY: acct.apiKey }
  const ns = nsName(stem)
  await namespace(srv, acct.apiKey, ns)
  return { kv, srv, acct, env, ns }
}
