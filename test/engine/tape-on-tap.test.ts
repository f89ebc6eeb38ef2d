// The tape-compatible `test` that runs abstract-level's suite fails exactly what tape fails:
// a fixture of tape-style tests runs in a child process, and each must pass or fail as its
// name says.
import { execFile } from 'node:child_process'
import path from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { repoRoot } from './helpers.js'

t.test('tape semantics over tap: nothing loosened', async (t) => {
  const fixture = path.join(repoRoot, 'test/engine/child/tape-cases.ts')
  const out = await promisify(execFile)(process.execPath, ['--import', 'tsx', fixture], {
    cwd: repoRoot,
  }).then(
    (r) => r.stdout,
    (e: { stdout: string }) => e.stdout,
  )
  const results = [...out.matchAll(/^(not ok|ok) \d+ - (passes|fails): (.*?)(?: # time=.*)?$/gm)]
  t.equal(results.length, 12, 'every case ran')
  for (const [, got, want, name] of results)
    t.equal(got, want === 'passes' ? 'ok' : 'not ok', `${want}: ${name}`)
})
