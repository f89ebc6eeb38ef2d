// cairn-kv's history, restore and export at a point against a real server (the rest of the
// command line: cairn-kv.test.ts). Run again on Redis by cairn-kv-history-on-redis.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { kvAgainstServer } from './kv-bin.js'

t.test('cairn-kv history, restore and export at a point', async (t) => {
  const { kv, env, ns } = await kvAgainstServer(t, 'kvh')
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
