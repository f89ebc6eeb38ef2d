// cairn-kv, the client package's command line, run as a user runs it (the real bin over the
// built package) against a real server: round trips, export and import, exit codes and watch
// (history and restore: cairn-kv-history.test.ts). Run again on Redis by cairn-kv-on-redis.
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { endsWithTest } from '../helpers/reaper.js'
import { nsName } from './helpers.js'
import { bin, kvAgainstServer } from './kv-bin.js'

t.test('cairn-kv against a real server', async (t) => {
  const { kv, srv, acct, env, ns } = await kvAgainstServer(t, 'kv')

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
  t.equal((await kv(env, ['get', other, 'c'])).stdout, '[1]\n', 'and the server goes on')

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

  // watch prints one change per line as they come: from --since, so it needs no head start.
  const before = JSON.parse((await kv(env, ['put', ns, 'w/0', '"before"'])).stdout).version
  const child = endsWithTest(
    t,
    execFile(process.execPath, [bin, 'watch', ns, '--prefix', 'w/', '--since', before], {
      env: { ...process.env, ...env },
    }),
  )
  let seen = ''
  const line = new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (c) => {
      seen += c
      if (seen.includes('\n')) resolve()
    })
    child.once('exit', (code) => reject(new Error(`watch ended (${code}) before a change`)))
  })
  await kv(env, ['put', ns, 'w/1', '"hi"'])
  await line
  child.kill()
  const ev = JSON.parse(seen.split('\n')[0]!)
  t.match(ev, { type: 'put', key: 'w/1', value: 'hi' })
})
