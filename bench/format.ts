// The benchmarks rewrite bench/RESULTS.md; this lays it out as the project's formatter does,
// so `npm run lint` stays green after a run.
import { spawnSync } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')

export function formatResults(file: string): void {
  spawnSync(path.join(root, 'node_modules', '.bin', 'biome'), ['format', '--write', file], {
    cwd: root,
    stdio: 'ignore',
  })
}
