// The `cairn` command line, as an operator uses it: on a stopped server's data directory
// (it opens the storage itself) and on a running one (through the operator endpoint).
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { cairn, json } from '../helpers/cli.js'
import { otherProcess } from '../helpers/other-process.js'
import { startServer } from '../helpers/server.js'
import { Client } from './contract/http.js'

t.test('with the server stopped, the commands work on the data directory', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-cli-'))
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }))

  const made = await cairn(['account', 'create', '--email', 'Ops@Example.com', '--data', dir])
  t.equal(made.code, 0, made.stderr)
  const secret = /cairn_[A-Za-z0-9]{32}/.exec(made.stdout)?.[0]
  t.ok(secret, 'the human output shows the new key')
  t.match(made.stdout, /shown once/)

  const again = await cairn(['account', 'create', '--email', 'ops@example.com', '--data', dir])
  t.equal(again.code, 1, 'the same email twice is refused')
  t.match(again.stderr, /already exists/)

  const noPassword = json(await cairn(['account', 'list', '--data', dir, '--json']))
  t.equal(noPassword.accounts[0].hasPassword, false, 'made without a password')
  const weak = await cairn([
    'account',
    'password',
    '--email',
    'ops@example.com',
    '--password',
    'short',
    '--data',
    dir,
  ])
  t.equal(weak.code, 1, 'a password under 8 characters is refused')
  const set = await cairn([
    'account',
    'password',
    '--email',
    'ops@example.com',
    '--password',
    'long enough',
    '--data',
    dir,
  ])
  t.equal(set.code, 0, set.stderr)
  const listed = json(await cairn(['account', 'list', '--data', dir, '--json']))
  t.equal(listed.accounts[0].hasPassword, true, 'the password is set')
  t.notMatch(JSON.stringify(listed), /scrypt|long enough/, 'and never shown')
  t.same(
    listed.accounts.map((a: { email: string }) => a.email),
    ['ops@example.com'],
    'emails are stored lower-cased',
  )

  const ro = json(
    await cairn([
      'key',
      'create',
      '--email',
      'ops@example.com',
      '--name',
      'reader',
      '--permission',
      'read',
      '--namespaces',
      'a,b',
      '--data',
      dir,
      '--json',
    ]),
  )
  t.match(ro.secret, /^cairn_[A-Za-z0-9]{32}$/)
  t.same(ro.key.namespaces, ['a', 'b'])
  t.equal(ro.key.permission, 'read')
  t.notOk('hash' in ro.key, 'the hash never leaves the server')

  const keys = json(
    await cairn(['key', 'list', '--email', 'ops@example.com', '--data', dir, '--json']),
  ).keys
  t.equal(keys.length, 2)
  t.notOk(JSON.stringify(keys).includes(secret!), 'listing never shows a secret')

  const plan = json(
    await cairn(['plan', 'set', '--email', 'ops@example.com', 'pro', '--data', dir, '--json']),
  )
  t.equal(plan.account.plan, 'pro')
  const badPlan = await cairn(['plan', 'set', '--email', 'ops@example.com', 'gold', '--data', dir])
  t.equal(badPlan.code, 1)
  t.match(badPlan.stderr, /no plan "gold"/)

  const missing = await cairn(['key', 'list', '--email', 'nobody@example.com', '--data', dir])
  t.equal(missing.code, 1)
  t.match(missing.stderr, /no account/)
  const usage = await cairn(['key', 'rotate', '--email', 'ops@example.com', '--data', dir])
  t.equal(usage.code, 2, 'a missing flag is a usage error')
  t.match(usage.stderr, /--id/)
  const valueless = await cairn(['account', 'list', '--data'])
  t.equal(valueless.code, 2, 'a flag without its value is a usage error')
  t.match(valueless.stderr, /--data needs a value/)
  for (const words of [['frobnicate'], ['account', 'frob']]) {
    const unknown = await cairn([...words, '--data', dir])
    t.equal(unknown.code, 2, `${words.join(' ')}: an unknown command is a usage error`)
    t.match(unknown.stderr, /there is no command/)
  }

  // The key made offline works once the server runs on the directory.
  const srv = await startServer({ dataDir: dir })
  t.teardown(() => srv.stop())
  const api = new Client(srv.baseUrl, secret!)
  t.equal((await api.post('/namespaces', { name: 'a' })).status, 201)
  t.equal((await new Client(srv.baseUrl, ro.secret).get('/a')).status, 200, 'the read key reads')
  const usageRes = await api.get('/usage')
  t.equal(usageRes.json.plan.id, 'pro', 'the plan set offline is in force')
})

t.test('with the server running, the commands go through it and take effect at once', async (t) => {
  const srv = await startServer()
  t.teardown(() => srv.stop())
  const dir = srv.dataDir
  const made = json(
    await cairn(['account', 'create', '--email', 'live@example.com', '--data', dir, '--json']),
  )
  const api = new Client(srv.baseUrl, made.apiKey.secret)
  t.equal(
    (await api.post('/namespaces', { name: 'n' })).status,
    201,
    'a key made through the running server works at once',
  )

  const extra = json(
    await cairn([
      'key',
      'create',
      '--email',
      'live@example.com',
      '--name',
      'extra',
      '--data',
      dir,
      '--json',
    ]),
  )
  const other = new Client(srv.baseUrl, extra.secret)
  t.equal((await other.get('/n')).status, 200)
  const rotated = json(
    await cairn([
      'key',
      'rotate',
      '--email',
      'live@example.com',
      '--id',
      extra.key.id,
      '--data',
      dir,
      '--json',
    ]),
  )
  t.equal((await other.get('/n')).status, 401, 'the old secret dies at once')
  t.equal((await new Client(srv.baseUrl, rotated.secret).get('/n')).status, 200)
  const revoked = await cairn([
    'key',
    'revoke',
    '--email',
    'live@example.com',
    '--id',
    extra.key.id,
    '--data',
    dir,
  ])
  t.equal(revoked.code, 0, revoked.stderr)
  t.equal((await new Client(srv.baseUrl, rotated.secret).get('/n')).status, 401, 'revoked')

  await api.mustPut('n', 'k', 'backed up')
  const backupDir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-backup-')), 'copy')
  t.teardown(() => fs.rmSync(path.dirname(backupDir), { recursive: true, force: true }))
  const backup = await cairn(['backup', '--to', backupDir, '--data', dir])
  t.equal(backup.code, 0, backup.stderr)
  const copy = await startServer({ dataDir: backupDir })
  t.teardown(() => copy.stop())
  t.equal(
    (await new Client(copy.baseUrl, made.apiKey.secret).get('/n/k')).text,
    '{"value":"backed up"}',
    'the backup serves the same data and keys',
  )

  const deleted = await cairn(['account', 'delete', '--email', 'live@example.com', '--data', dir])
  t.equal(deleted.code, 0, deleted.stderr)
  t.equal((await api.get('/n/k')).status, 401, 'a deleted account is gone at once')
})

t.test('the operator endpoint refuses requests without the token or through a proxy', async (t) => {
  const srv = await startServer()
  t.teardown(() => srv.stop())
  const token = fs.readFileSync(path.join(srv.dataDir, 'operator.token'), 'utf8').trim()
  t.equal(
    fs.statSync(path.join(srv.dataDir, 'operator.token')).mode & 0o077,
    0,
    'the token file is private to its owner',
  )
  const post = (headers: Record<string, string>) =>
    fetch(`${srv.url}/_operator/account.list`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: '{}',
    })
  t.equal((await post({})).status, 401, 'no token')
  t.equal((await post({ 'x-operator-token': 'x'.repeat(token.length) })).status, 401, 'wrong token')
  t.equal(
    (await post({ 'x-operator-token': token, 'x-forwarded-for': '203.0.113.9' })).status,
    401,
    'through a proxy',
  )
  t.equal((await post({ 'x-operator-token': token })).status, 200, 'the right token, directly')
  let refused: Response | undefined
  for (let i = 0; i < 10 && !refused; i++) {
    const res = await post({ 'x-operator-token': 'y'.repeat(token.length) })
    if (res.status === 429) refused = res
  }
  t.ok(refused, 'wrong tokens from one address are soon refused with 429')
  t.match(await refused?.json(), { error: { code: 'rate_limited' } })
  t.ok(Number(refused?.headers.get('retry-after')) >= 1, 'with Retry-After')
  t.equal((await post({ 'x-operator-token': token })).status, 200, 'the right token still works')
})

t.test(
  'after a kill -9, files naming a pid now used by another program hold nothing',
  async (t) => {
    const other = await otherProcess(t)
    if (typeof other === 'string') return void t.skip(other)
    const srv = await startServer()
    t.teardown(() => srv.stop())
    const dir = srv.dataDir
    await srv.createAccount('before@example.com')
    await srv.kill()
    // What a reboot can leave: the killed server's pid now belongs to an unrelated program.
    // Stand-in: a live process, named in LOCK and server.json with a start time not its own.
    const { boot } = other
    fs.writeFileSync(path.join(dir, 'LOCK'), `${other.pid} 1 ${boot}`)
    const info = JSON.parse(fs.readFileSync(path.join(dir, 'server.json'), 'utf8'))
    fs.writeFileSync(
      path.join(dir, 'server.json'),
      JSON.stringify({ ...info, pid: other.pid, owner: `${other.pid} 1 ${boot}` }),
    )

    const listed = await cairn(['account', 'list', '--data', dir, '--json'])
    t.equal(listed.code, 0, `the command opens the directory itself: ${listed.stderr}`)
    t.same(
      json(listed).accounts.map((a: { email: string }) => a.email),
      ['before@example.com'],
    )
    await srv.start()
    const made = await cairn(['account', 'create', '--email', 'after@example.com', '--data', dir])
    t.equal(made.code, 0, `the server starts again, and commands reach it: ${made.stderr}`)
  },
)
