// cairn-kv, the client package's command line, as a user runs it: the real bin over the
// package's build, against a real server (cairn-kv*.test.ts).
import { execFile, execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import fs from 'node:fs'
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

// The bin runs over the package's build, as it is installed. The cairn-kv test files run
// side by side (tap's jobs, and the on-Redis runners' children): a build removes dist/ first,
// so one made by a file while another runs the bin would pull it away. So a build happens
// under a lock, and only when the client's sources differ from those dist/ was built from
// (a hash of them, kept beside the build): the first file of a run builds, the others find
// the build they would have made.
await buildOnce()

async function buildOnce(): Promise<void> {
  const lock = path.join(root, 'client/.build-lock')
  const mark = path.join(root, 'client/dist/.built-from')
  for (;;) {
    try {
      fs.mkdirSync(lock)
      break
    } catch {
      // A lock older than any build is one a killed process left.
      const age = Date.now() - (fs.statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now())
      if (age > 120_000) fs.rmSync(lock, { recursive: true, force: true })
      await new Promise((r) => setTimeout(r, 100))
    }
  }
  try {
    const sources = sourcesHash()
    if (fs.existsSync(mark) && fs.readFileSync(mark, 'utf8') === sources) return
    execFileSync(process.execPath, [path.join(root, 'client/scripts/build.mjs')], {
      stdio: 'ignore',
    })
    fs.writeFileSync(mark, sources)
  } finally {
    fs.rmSync(lock, { recursive: true, force: true })
  }
}

/** A hash of everything the build reads: the sources, the manifest, the configs, the script. */
function sourcesHash(): string {
  const hash = createHash('sha256')
  const dir = path.join(root, 'client')
  const files = [
    'package.json',
    'tsconfig.json',
    'tsconfig.cjs.json',
    'scripts/build.mjs',
    ...fs
      .readdirSync(path.join(dir, 'src'), { recursive: true, encoding: 'utf8' })
      .map((f) => path.join('src', f)),
  ].sort()
  for (const f of files) {
    const full = path.join(dir, f)
    if (!fs.statSync(full).isFile()) continue
    hash.update(f).update('\0').update(fs.readFileSync(full)).update('\0')
  }
  return hash.digest('hex')
}

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
