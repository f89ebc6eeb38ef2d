// Runs the `cairn` command line as an operator would, from the checkout's source.
import { execFile } from 'node:child_process'
import path from 'node:path'
import { reapWithMe } from './reaper.js'
import { root } from './server.js'

export interface Run {
  code: number
  stdout: string
  stderr: string
}

export function cairn(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      ['--import', 'tsx', path.join(root, 'server/cli/index.ts'), ...args],
      { cwd: root, timeout: 120_000, env: { ...process.env, ...env } },
      (err, stdout, stderr) =>
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    )
    // Its own timeout ends it if this process lives; the watcher, if this process is killed.
    if (child.pid !== undefined) reapWithMe([child.pid])
  })
}

/** The last line of a `--json` run, parsed. */
export const json = (r: Run) => JSON.parse(r.stdout.trim().split('\n').pop()!)
