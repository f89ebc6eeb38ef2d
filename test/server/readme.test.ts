// The README's quick start, run as a newcomer pastes it: the account command, then each curl
// line, against a real server. A README that does not work is a bug like any other.
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { runCurlExamples } from '../helpers/curl.js'
import { root, startServer } from '../helpers/server.js'

const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8')
const quickStart = readme.slice(
  readme.indexOf('## Quick start'),
  readme.indexOf('\n## ', readme.indexOf('## Quick start') + 1),
)

t.test('the quick start works as written', async (t) => {
  const blocks = [...quickStart.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!)
  const account = blocks.find((b) => b.includes('cairn account create'))
  const calls = blocks.find((b) => b.includes('curl'))
  t.ok(account && calls, 'the quick start makes a key and uses it')
  const srv = await startServer()
  t.teardown(() => srv.stop())
  const email = /--email (\S+)/.exec(account!)![1]!
  const out = execFileSync(
    process.execPath,
    [
      '--import',
      'tsx',
      path.join(root, 'server/cli.ts'),
      'account',
      'create',
      '--email',
      email,
      '--data',
      srv.dataDir,
      '--json',
    ],
    { cwd: root, encoding: 'utf8' },
  )
  const key = JSON.parse(out).apiKey.secret as string
  // Shell variables as the block sets them; the server's own address for localhost:8080.
  const vars = Object.fromEntries(
    [...calls!.matchAll(/^(\w+)='([^']*)'$/gm)].map((m) => [m[1]!, m[2]!]),
  )
  const text = calls!
    .replace(/\$KEY/g, key)
    .replace(/"\$(\w+)"/g, (_, v: string) => `"${vars[v] ?? ''}"`)
    .replace(/localhost:8080/g, `127.0.0.1:${srv.port}`)
  const results = await runCurlExamples(text)
  t.ok(results.length >= 3, `${results.length} curl commands`)
  for (const r of results)
    t.ok(r.status >= 200 && r.status < 300, `${r.command}: ${r.status} ${r.text.slice(0, 120)}`)
  t.match(results[results.length - 1]?.text, /"value":"world"/, 'the last one reads the value back')
})
