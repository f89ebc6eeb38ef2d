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
      path.join(root, 'server/cli/index.ts'),
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

t.test("the API section's examples answer what their comments say, run in order", async (t) => {
  const api = readme.slice(
    readme.indexOf('## The API'),
    readme.indexOf('\n## ', readme.indexOf('## The API') + 1),
  )
  const srv = await startServer()
  t.teardown(() => srv.stop())
  const key = (await srv.createAccount()).apiKey
  const base = `http://127.0.0.1:${srv.port}/v1`
  let checked = 0
  for (const block of [...api.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!)) {
    // A command ends at a line end outside quotes (a JSON body may span lines).
    const lines: string[] = []
    for (const line of block.replace(/\\\n/g, ' ').split('\n')) {
      const last = lines.length - 1
      if (last >= 0 && (lines[last]!.split("'").length - 1) % 2 === 1) lines[last] += line
      else lines.push(line)
    }
    for (let i = 0; i < lines.length; i++) {
      const command = lines[i]!
      // Streams (curl -N) stay open; the watch tests cover what they show.
      if (!command.startsWith('curl ') || command.includes(' -N ')) continue
      const want = lines[i + 1]?.startsWith('# ') ? lines[i + 1]!.slice(2) : ''
      const text = command.replace(/\$CAIRN/g, base).replace(/\$KEY/g, key)
      const [res] = await runCurlExamples(text)
      const status = /^(\d{3})\b/.exec(want)?.[1]
      if (status) t.equal(String(res!.status), status, `${command.slice(0, 90)}: status`)
      const at = want.indexOf('{')
      let shown: unknown
      for (let end = want.length; at >= 0 && end > at && shown === undefined; end--) {
        try {
          shown = JSON.parse(want.slice(at, end))
        } catch {}
      }
      if (shown === undefined || want.includes('...')) continue
      // An NDJSON answer (an export) is shown by its first line, the header.
      const ndjson = command.includes('export=1')
      const got = JSON.parse(ndjson ? res!.text.split('\n')[0]! : res!.text)
      // Times are the server's own.
      const scrub = (v: any) =>
        JSON.parse(
          JSON.stringify(v).replace(/"(createdAt|exportedAt|historyFrom)":"[^"]*"/g, '"$1":""'),
        )
      t.same(scrub(got), scrub(shown), `${command.slice(0, 90)}: body`)
      checked++
    }
  }
  t.ok(checked >= 15, `${checked} answers checked against the README`)
})
