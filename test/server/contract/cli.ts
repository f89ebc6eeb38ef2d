// Runs the `cairn` command line against a running test server's data directory, as an
// operator would, and returns the key it made.
import { execFile } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { reapWithMe } from '../../helpers/reaper.js'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..')

export interface MadeKey {
  id: string
  secret: string
}

export function cliRaw(dataDir: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      process.execPath,
      [
        '--import',
        'tsx',
        path.join(root, 'server/cli/index.ts'),
        ...args,
        '--data',
        dataDir,
        '--json',
      ],
      { cwd: root, timeout: 60_000 },
      (err, stdout, stderr) => {
        if (err) reject(new Error(`cairn ${args.join(' ')}: ${err.message}\n${stderr}`))
        else resolve(stdout)
      },
    )
    // Its own timeout ends it if this process lives; the watcher, if this process is killed.
    if (child.pid !== undefined) reapWithMe([child.pid])
  })
}

/** Runs a key command and picks the key's id and secret out of its JSON output. */
export async function cli(srv: { dataDir: string }, args: string[]): Promise<MadeKey> {
  const out = await cliRaw(srv.dataDir, args)
  const json = JSON.parse(out.trim().split('\n').pop() ?? '{}')
  const id = json.key?.id ?? json.id
  const secret = json.secret ?? json.key?.secret ?? json.apiKey?.secret
  return { id, secret }
}
