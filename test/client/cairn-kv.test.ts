// cairn-kv, the client package's command line, run as a user runs it (the real bin over the
// built package) against a real server: round trips, export and import, history, restore and
// export at a point, exit codes.
import { execFile, execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { nsName, root, server } from './helpers.js'

const bin = path.join(root, 'client/bin/cairn-kv.mjs')

interface Run {
  code: number
  stdout: string
  stderr: string
}

function kv(env: Record<string, string>, args: string[], input?: string): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [bin, ...args],
      { env: { ...process.env, ...env }, timeout: 60_000 },
      (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    )
    if (input !== undefined) child.stdin!.end(input)
  })
}

// The bin runs over the package's build, as it is installed.
execFileSync(process.execPath, [path.join(root, 'client/scripts/build.mjs')], { stdio: 'ignore' })

async function namespace(srv: { baseUrl: string }, apiKey: string, name: string): Promise<void> {
  const made = await fetch(`${srv.baseUrl}/namespaces`, {
    method: 'POST',
    headers: { 'x-api-key': apiKey, 'content-type': 'application/json' },
    body: JSON.stringify({ name }),
  })
  if (made.status !== 201) throw new Error(`namespace ${name}: ${made.status}`)
}

t.test('cairn-kv against a real server', async (t) => {
  const srv = await server(t)
  const acct = await srv.createAccount()
  const env = { CAIRN_URL: srv.baseUrl, CAIRN_KEY: acct.apiKey }
  const ns = nsName('kv')
  await namespace(srv, acct.apiKey, ns)

  const raw = '{"big":12345678901234567890,"z":-0}'
  const put = await kv(env, ['put', ns, 'a/1', raw])
  t.equal(put.code, 0, put.stderr)
  t.match(put.stdout, /"created":true/)
  t.equal((await kv(env, ['get', ns, 'a/1'])).stdout, `${raw}\n`, 'the value exactly as stored')
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-kv-'))
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }))
  fs.writeFileSync(path.join(dir, 'v.json'), '"from a file"')
  const flagsFirst = await kv(env, [
    '--metadata',
    '{"o":1}',
    'put',
    ns,
    'a/2',
    '--file',
    path.join(dir, 'v.json'),
    '--ttl',
    '3600',
  ])
  t.equal(flagsFirst.code, 0, flagsFirst.stderr)
  t.equal(
    (await kv(env, ['get', ns, 'a/2', '--metadata'])).stdout,
    '{"value":"from a file","metadata":{"o":1}}\n',
  )
  await kv(env, ['put', ns, 'b', '1'])
  t.equal((await kv(env, ['list', ns])).stdout, 'a/1\na/2\nb\n')
  t.equal((await kv(env, ['list', ns, '--prefix', 'a/'])).stdout, 'a/1\na/2\n')
  t.equal((await kv(env, ['list', ns, '--start', 'a/2', '--end', 'c'])).stdout, 'a/2\nb\n')
  const values = (await kv(env, ['list', ns, '--values', '--end', 'a/2'])).stdout
  t.equal(values, `{"key":"a/1","value":${raw},"version":"1"}\n`)
  t.same(JSON.parse((await kv(env, ['count', ns, '--prefix', 'a/'])).stdout).count, 2)

  const file = path.join(dir, 'out.ndjson')
  const exp = await kv(env, ['export', ns, '--out', file])
  t.equal(exp.code, 0, exp.stderr)
  const text = fs.readFileSync(file, 'utf8')
  t.match(text, /^\{"cairn":"export"/)
  t.match(text, /\{"end":true,"entries":3\}\n$/)
  const stdoutExport = await kv(env, ['export', ns])
  t.equal(
    stdoutExport.stdout.replace(/"exportedAt":"[^"]*"/, ''),
    text.replace(/"exportedAt":"[^"]*"/, ''),
    'to stdout the same',
  )

  const other = nsName('kv2')
  await fetch(`${srv.baseUrl}/namespaces`, {
    method: 'POST',
    headers: { 'x-api-key': acct.apiKey, 'content-type': 'application/json' },
    body: JSON.stringify({ name: other }),
  })
  const imp = await kv(env, ['import', other, '--file', file, '--mode', 'replace'])
  t.equal(imp.code, 0, imp.stderr)
  t.same(JSON.parse(imp.stdout), { imported: 3, deleted: 0, version: '3' })
  const fromStdin = await kv(env, ['import', other], '{"key":"c","value":[1]}\n')
  t.same(JSON.parse(fromStdin.stdout).imported, 1)
  t.equal((await kv(env, ['get', other, 'a/1'])).stdout, `${raw}\n`, 'exported, imported, exact')

  const del = await kv(env, ['delete', ns, 'b'])
  t.equal(del.code, 0)
  const gone = await kv(env, ['get', ns, 'b'])
  t.equal(gone.code, 1, 'an API error exits 1')
  t.match(gone.stderr, /key_not_found/)
  const badLine = await kv(env, ['import', other], '{"key":"x"}\n')
  t.equal(badLine.code, 1)
  t.match(badLine.stderr, /invalid_import.*line 1/)

  for (const args of [
    [],
    ['get', ns],
    ['frobnicate', ns],
    ['list', ns, '--bogus'],
    ['import', ns, '--mode', 'all'],
  ]) {
    const r = await kv(env, args)
    t.equal(r.code, 2, `bad usage exits 2: ${args.join(' ')}`)
    t.match(r.stderr, /usage: cairn-kv/)
  }
  const noKey = await kv({ CAIRN_URL: srv.baseUrl, CAIRN_KEY: '' }, ['get', ns, 'a/1'])
  t.equal(noKey.code, 2)
  const wrongKey = await kv({ ...env }, ['get', ns, 'a/1', '--key', 'cairn_nope'])
  t.equal(wrongKey.code, 1)
  t.match(wrongKey.stderr, /unauthorized/)

  // watch prints one change per line as they come.
  const child = execFile(process.execPath, [bin, 'watch', ns, '--prefix', 'w/'], {
    env: { ...process.env, ...env },
  })
  let seen = ''
  const line = new Promise<void>((resolve) => {
    child.stdout!.on('data', (c) => {
      seen += c
      if (seen.includes('\n')) resolve()
    })
  })
  await new Promise((r) => setTimeout(r, 1500))
  await kv(env, ['put', ns, 'w/1', '"hi"'])
  await line
  child.kill()
  const ev = JSON.parse(seen.split('\n')[0]!)
  t.match(ev, { type: 'put', key: 'w/1', value: 'hi' })
})

t.test('cairn-kv history, restore and export at a point', async (t) => {
  const srv = await server(t)
  const acct = await srv.createAccount()
  const env = { CAIRN_URL: srv.baseUrl, CAIRN_KEY: acct.apiKey }
  const ns = nsName('kvh')
  await namespace(srv, acct.apiKey, ns)
  const raw = '{"big":12345678901234567890,"z":-0,"s":"a, \\"b\\" ]"}'
  t.equal((await kv(env, ['put', ns, 'k', raw])).code, 0)
  t.equal((await kv(env, ['put', ns, 'k', '2', '--metadata', '{"m":[1]}'])).code, 0)
  t.equal((await kv(env, ['put', ns, 'p/x', '"x"'])).code, 0)
  // Version 3 is the point: k is 2, p/x is "x".
  t.equal((await kv(env, ['delete', ns, 'k'])).code, 0)
  t.equal((await kv(env, ['put', ns, 'p/y', '"y"'])).code, 0)

  const hist = await kv(env, ['history', ns, 'k'])
  t.equal(hist.code, 0, hist.stderr)
  const lines = hist.stdout.trimEnd().split('\n')
  t.equal(lines.length, 3, 'every version, one per line')
  const versions = lines.map((l) => JSON.parse(l))
  t.same(
    versions.map((v) => [v.version, v.deleted ?? false]),
    [
      ['4', true],
      ['2', false],
      ['1', false],
    ],
    'newest first, the delete included',
  )
  t.same(versions[1].metadata, { m: [1] })
  t.match(lines[2], `"value":${raw}`, 'a value exactly as stored')
  t.equal((await kv(env, ['history', ns, 'never'])).stdout, '', 'a key never written: none')

  const file = path.join(os.tmpdir(), `${ns}.ndjson`)
  t.teardown(() => fs.rmSync(file, { force: true }))
  const exp = await kv(env, ['export', ns, '--at', '3', '--out', file])
  t.equal(exp.code, 0, exp.stderr)
  const exported = fs
    .readFileSync(file, 'utf8')
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l))
  t.equal(exported[0].version, '3', "the header's version is the point's")
  t.same(
    exported.slice(1, -1).map((e) => [e.key, e.value]),
    [
      ['k', 2],
      ['p/x', 'x'],
    ],
    'the namespace as it was at version 3',
  )

  const restored = await kv(env, ['restore', ns, '--at', '3', '--prefix', 'p/'])
  t.equal(restored.code, 0, restored.stderr)
  t.same(JSON.parse(restored.stdout), { restored: 1, version: '6' }, 'p/y, created since, goes')
  t.equal((await kv(env, ['get', ns, 'k'])).code, 1, 'outside the prefix k stays deleted')
  const all = await kv(env, ['restore', '--at', '3', ns, '--start', 'a', '--end', 'l'])
  t.same(JSON.parse(all.stdout), { restored: 1, version: '7' }, 'a range: k comes back')
  t.equal((await kv(env, ['get', ns, 'k'])).stdout, '2\n')

  const old = await kv(env, ['restore', ns, '--at', '1970-01-01T00:00:00Z'])
  t.equal(old.code, 1, 'an API error exits 1')
  t.match(old.stderr, /history_expired/)
  const future = await kv(env, ['export', ns, '--at', '99'])
  t.equal(future.code, 1)
  t.match(future.stderr, /invalid_point/)
  for (const args of [
    ['restore', ns],
    ['restore', ns, '--at'],
    ['history', ns],
    ['history', ns, 'k', 'extra'],
    ['get', ns, 'k', '--at', '3'],
  ]) {
    const r = await kv(env, args)
    t.equal(r.code, 2, `bad usage exits 2: ${args.join(' ')}`)
    t.match(r.stderr, /usage: cairn-kv/)
  }
})
