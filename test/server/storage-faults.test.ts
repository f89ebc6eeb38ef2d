// A real server on a real, small disk: full, read-only and damaged. Whatever the disk does,
// a write that was refused is never visible, every acknowledged write is still there after a
// clean restart, and the server answers with the contract's codes rather than a 500.
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import t, { type Test } from 'tap'
import { plansFile } from '../helpers/plans.js'
import { root, startServer } from '../helpers/server.js'
import { logIn, preSession } from '../helpers/dashboard-api.js'
import { mountTmpfs } from '../helpers/tmpfs.js'
import { Client, encodeKey, sleep } from './contract/http.js'

const cli = (...args: string[]) =>
  execFileSync(
    process.execPath,
    ['--import', 'tsx', path.join(root, 'server/cli/index.ts'), ...args],
    {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  )

async function readyz(url: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${url}/readyz`)
  return { status: res.status, body: await res.json() }
}

/** Retries `fn` until it returns true, for at most `ms`; the answer is whether it did. */
async function eventually(fn: () => Promise<boolean>, ms: number): Promise<boolean> {
  const end = Date.now() + ms
  for (;;) {
    if (await fn()) return true
    if (Date.now() > end) return false
    await sleep(200)
  }
}

t.test('a full disk answers 507, shows nothing it refused, and heals by itself', async (t) => {
  const fsys = mountTmpfs(8 * 1024 * 1024)
  if (typeof fsys === 'string') return t.skip(fsys)
  t.teardown(() => fsys.unmount())
  const dataDir = path.join(fsys.dir, 'data')
  // No usage writes in the background: a usage record small enough to fit where a value
  // did not would, rightly, turn the engine back to ok, and /readyz's answer below would
  // depend on that timer.
  const srv = await startServer({
    plans: plansFile(),
    dataDir,
    env: { CAIRN_USAGE_FLUSH_MS: '3600000' },
  })
  t.teardown(() => srv.stop())
  const acct = await srv.createAccount()
  let api = new Client(srv.baseUrl, acct.apiKey)
  await api.createNamespace('full')

  const acked = new Map<string, string>()
  const refused: string[] = []
  const statuses = new Map<number, number>()
  const filler = fsys.fill(256 * 1024)
  const pad = 'v'.repeat(8 * 1024)
  // Eight writers at once, so refusals land inside group commits, not only between them.
  let n = 0
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (refused.length < 40 && n < 2000) {
        const key = `k${n++}`
        const body = `{"value":{"n":${JSON.stringify(key)},"pad":"${pad}"}}`
        const res = await api.put(`/full/${key}`, body)
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1)
        if (res.status === 201) acked.set(key, body)
        else {
          t.equal(res.status, 507, `a refused write is 507 (${key}: ${res.text})`)
          t.equal(res.json?.error?.code, 'insufficient_storage')
          t.ok(res.headers['retry-after'], '507 says when to retry')
          refused.push(key)
        }
      }
    }),
  )
  t.ok(refused.length > 0, `the disk filled up (${JSON.stringify([...statuses])})`)
  t.ok(acked.size > 0, 'some writes fitted before it did')
  const logged = srv.lines.filter((l) => l.includes('storage refused')).length
  // The 40 refusals come within a second or two: a line each would be 40.
  t.ok(
    logged >= 1 && logged < Math.min(refused.length, 20),
    `refusals are logged, not each one (${logged} lines for ${refused.length})`,
  )

  for (const key of refused) {
    const res = await api.get(`/full/${key}`)
    t.equal(res.status, 404, `refused ${key} is not visible`)
  }
  const listed = new Set(await api.listAll('full'))
  t.same(
    refused.filter((k) => listed.has(k)),
    [],
    'no refused key is listed',
  )
  t.same(
    [...acked.keys()].filter((k) => !listed.has(k)),
    [],
    'every acknowledged key is listed',
  )
  for (const [key, body] of [...acked].slice(0, 20)) {
    const res = await api.get(`/full/${key}`)
    t.equal(res.text, body, `reads go on while the disk is full (${key})`)
  }
  const ready = await readyz(srv.url)
  t.equal(ready.body.storage, 'no_space', '/readyz names the full disk')

  fs.rmSync(filler)
  const healed = await eventually(async () => {
    const res = await api.put('/full/after', '{"value":"room again"}')
    return res.status === 201
  }, 10_000)
  t.ok(healed, 'writes resume by themselves once space is freed')
  acked.set('after', '{"value":"room again"}')
  t.equal((await readyz(srv.url)).status, 200, '/readyz is ready again')

  const exit = await srv.terminate()
  t.equal(exit.code, 0, 'a clean stop after a full disk')
  t.notOk(fs.existsSync(path.join(dataDir, 'LOCK')), 'the stop removed LOCK')
  await srv.start()
  api = new Client(srv.baseUrl, acct.apiKey)
  for (const [key, body] of acked) {
    const res = await api.get(`/full/${encodeKey(key)}`)
    if (res.text !== body) t.fail(`${key} after restart: ${res.status} ${res.text.slice(0, 80)}`)
  }
  for (const key of refused) t.equal((await api.get(`/full/${key}`)).status, 404)
  t.pass(
    `${acked.size} acknowledged writes intact after restart, ${refused.length} refused ones absent`,
  )
})

/** A server whose engine file I/O a test can make fail (see test/helpers/fault-preload.ts). */
async function faultyServer(t: Test, env: Record<string, string> = {}) {
  const control = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-faults-')), 'faults.json')
  fs.writeFileSync(control, '[]')
  const arm = async (faults: object[]) => {
    fs.writeFileSync(`${control}.tmp`, JSON.stringify(faults))
    fs.renameSync(`${control}.tmp`, control)
    await sleep(150) // the hook polls every 25 ms
  }
  const srv = await startServer({
    plans: plansFile(),
    nodeArgs: ['--import', path.join(root, 'test/helpers/fault-preload.ts')],
    env: { CAIRN_FAULT_CONTROL: control, ...env },
  })
  t.teardown(() => {
    if (srv.proc?.exitCode !== null && srv.proc?.exitCode !== 0)
      t.comment(`server exited: ${srv.stderr}${srv.lines.slice(-10).join('\n')}`)
    return srv.stop()
  })
  const acct = await srv.createAccount()
  const client = () => new Client(srv.baseUrl, acct.apiKey)
  return { srv, api: client(), client, arm }
}

for (const fault of [
  { op: 'fsync', code: 'EIO' },
  { op: 'write', code: 'EROFS' },
  { op: 'open', code: 'EMFILE' },
]) {
  t.test(
    `a failing disk (${fault.op} ${fault.code}) answers 503, /readyz says why, then recovers`,
    async (t) => {
      const { srv, client, arm } = await faultyServer(t)
      let api = client()
      await api.createNamespace('ro')
      await api.mustPut('ro', 'before', 'kept')
      // Fill the active segment's room so the next writes also start a segment (an open).
      await arm([fault])
      // A PUT writes and syncs the log; files are opened when a namespace is made.
      const res =
        fault.op === 'open'
          ? await api.post('/namespaces', { name: 'other' })
          : await api.put('/ro/during', { value: 'refused' })
      t.equal(res.status, 503, `a write on a failing disk is 503 (${res.text})`)
      t.equal(res.json?.error?.code, 'unavailable')
      t.ok(res.headers['retry-after'], '503 says when to retry')
      t.notMatch(
        res.text,
        /EIO|EROFS|EMFILE|\/tmp|\.seg|at .*\.ts/,
        'no path, errno or stack in the answer',
      )
      const again = await api.put('/ro/during2', { value: 'refused' })
      t.equal(again.status, 503, 'the failure is sticky until it clears')
      const ready = await readyz(srv.url)
      t.equal(ready.status, 503, '/readyz is 503')
      t.equal(ready.body.storage, 'failed')
      t.match(ready.body.reason, new RegExp(fault.code), '/readyz says why')
      t.equal((await api.get('/ro/before')).json?.value, 'kept', 'reads go on')
      t.equal((await api.get('/ro/during2')).status, 404, 'the refused write is not visible')
      const metrics = await (await fetch(`${srv.url}/metrics`)).text()
      t.match(metrics, /cairn_storage_state\{state="failed"\} 1/, 'a metric shows the failure')

      await arm([])
      const healed = await eventually(
        async () => (await api.put('/ro/after', { value: 'written' })).status === 201,
        20_000,
      )
      t.ok(healed, 'writes resume without a restart once the disk works')
      t.equal((await readyz(srv.url)).status, 200, '/readyz is ready again')
      const exit = await srv.terminate()
      t.equal(exit.code, 0, 'a clean stop')
      t.notOk(fs.existsSync(path.join(srv.dataDir, 'LOCK')), 'the stop removed LOCK')
      await srv.start()
      api = client()
      t.equal((await api.get('/ro/before')).json?.value, 'kept')
      t.equal((await api.get('/ro/after')).json?.value, 'written')
      t.equal((await api.get('/ro/during2')).status, 404)
    },
  )
}

t.test(
  'a namespace create or drop the disk refuses leaves nothing, now or after a crash',
  async (t) => {
    const { srv, client, arm } = await faultyServer(t)
    let api = client()
    await api.createNamespace('keep')
    await api.mustPut('keep', 'k', 'kept')
    const names = async () =>
      ((await api.get('/namespaces')).json?.namespaces ?? []).map((n: { name: string }) => n.name)
    // The namespace table's writes fail; the record's, in the log, do not.
    const tableFails = [{ op: 'open', code: 'EIO', path: 'NAMESPACES' }]
    let probes = 0
    const healthy = () =>
      eventually(
        async () => (await api.put(`/keep/probe${++probes}`, { value: 1 })).status === 201,
        20_000,
      )

    await arm(tableFails)
    t.equal((await api.post('/namespaces', { name: 'ghost' })).status, 503, 'the create is refused')
    t.notOk((await names()).includes('ghost'), 'and not listed')
    await arm([])
    t.ok(await healthy(), 'the disk works again')
    await arm(tableFails)
    t.equal((await api.del('/namespaces/keep')).status, 503, 'the drop is refused')
    await arm([])
    t.ok(await healthy(), 'the disk works again')
    t.ok((await names()).includes('keep'), 'the refused drop left the namespace')
    t.equal((await api.get('/keep/k')).json?.value, 'kept', 'and its data')
    const again = await api.post('/namespaces', { name: 'ghost' })
    t.equal(again.status, 201, `the refused name is free (${again.text})`)

    await arm(tableFails)
    t.equal((await api.post('/namespaces', { name: 'ghost2' })).status, 503)
    await srv.kill()
    await arm([])
    await srv.start()
    api = client()
    t.same((await names()).sort(), ['ghost', 'keep'], 'after a crash: only what was acknowledged')
    t.equal((await api.post('/namespaces', { name: 'ghost2' })).status, 201, 'and the name is free')
    t.equal((await api.get('/keep/k')).json?.value, 'kept')
  },
)

t.test('an account, key or rotation the disk refuses leaves nothing half working', async (t) => {
  // No background writes (usage, last-used times): the Nth write below is the test's own.
  const { srv, arm } = await faultyServer(t, { CAIRN_USAGE_FLUSH_MS: '3600000' })
  const cli = (command: string, args: Record<string, unknown>) =>
    srv.operator(command, args).then(
      (out) => ({ ok: true, out }),
      (err: Error) => ({ ok: false, out: err.message }),
    )
  // Every step of these is a write of its own, synced on its own: the second one fails.
  const secondWriteFails = [{ op: 'fsync', code: 'EIO', nth: 2, path: '\\.seg$' }]
  const healed = () =>
    eventually(async () => (await readyz(srv.url)).body.storage === undefined, 20_000)

  await arm(secondWriteFails)
  const refused = await cli('account.create', { email: 'half@example.com' })
  t.notOk(refused.ok, `the sign-up is refused (${refused.out})`)
  await arm([])
  t.ok(await healed(), 'the disk works again')
  const made = await cli('account.create', { email: 'half@example.com' })
  t.ok(made.ok, `the email is free for a sign-up again (${made.ok || made.out})`)
  const api = new Client(srv.baseUrl, made.out.apiKey.secret)
  t.equal((await api.get('/namespaces')).status, 200, "the new account's key works")

  await arm(secondWriteFails)
  t.notOk((await cli('key.create', { email: 'half@example.com', name: 'half' })).ok)
  await arm([])
  t.ok(await healed())
  const keys = (await cli('key.list', { email: 'half@example.com' })).out.keys
  t.same(
    keys.map((k: { name: string }) => k.name),
    ['default'],
    'the refused key is not listed',
  )

  await arm(secondWriteFails)
  const rotate = { email: 'half@example.com', id: keys[0].id }
  t.notOk((await cli('key.rotate', rotate)).ok, 'the rotation is refused')
  await arm([])
  t.ok(await healed())
  t.equal((await api.get('/namespaces')).status, 200, 'the old secret still works')
  await srv.kill()
  await srv.start()
  const after = new Client(srv.baseUrl, made.out.apiKey.secret)
  t.equal((await after.get('/namespaces')).status, 200, 'and after a crash')
})

t.test('a prefix delete the disk stops part way says how many went', async (t) => {
  const { client, arm } = await faultyServer(t, { CAIRN_USAGE_FLUSH_MS: '3600000' })
  const api = client()
  await api.createNamespace('dp')
  for (let tx = 0; tx < 3; tx++) {
    const ops = Array.from({ length: 500 }, (_, i) => ({
      op: 'put',
      key: `pre/${tx}-${i}`,
      value: i,
    }))
    t.equal((await api.post('/dp', { ops })).status, 200)
  }
  // Deleted a page of 1,000 at a time: the second page's write fails.
  await arm([{ op: 'fsync', code: 'EIO', nth: 2, path: '\\.seg$' }])
  const res = await api.del('/dp?prefix=pre/')
  t.equal(res.status, 503)
  t.match(res.json?.error?.message, /1000 keys with this prefix were deleted/, res.text)
  await arm([])
  const again = await eventually(async () => {
    const r = await api.del('/dp?prefix=pre/')
    return r.status === 200 && r.json.deleted === 500
  }, 20_000)
  t.ok(again, 'sent again, it deletes the rest')
  t.same((await api.get('/dp?prefix=pre/')).json?.keys, [], 'none left')
})

t.test('sign-up, password change and account delete the disk refuses part way', async (t) => {
  const { srv, arm } = await faultyServer(t, { CAIRN_USAGE_FLUSH_MS: '3600000' })
  const base = srv.url
  const healed = () =>
    eventually(async () => (await readyz(base)).body.storage === undefined, 20_000)
  const dash = async (path: string, body: unknown, cookie: string, csrf: string) => {
    const res = await fetch(`${base}/dashboard/api${path}`, {
      method: 'POST',
      headers: { origin: base, cookie, 'x-csrf-token': csrf, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
    return { status: res.status, json: (await res.json()) as any, headers: res.headers }
  }
  const me = async (cookie: string) =>
    (await fetch(`${base}/dashboard/api/me`, { headers: { cookie } })).status

  // Sign-ups the storage refused do not spend the address's 20 an hour.
  await arm([{ op: 'fsync', code: 'EIO', path: '\\.seg$' }])
  for (let i = 0; i < 20; i++) {
    const p = await preSession(base)
    const r = await dash(
      '/signup',
      { email: `early${i}@example.com`, password: 'long enough pw' },
      p.cookie,
      p.token,
    )
    t.equal(r.status, 503)
  }
  await arm([])
  t.ok(await healed())
  // The fourth synced write of a sign-up is its session, after the account is made.
  await arm([{ op: 'fsync', code: 'EIO', nth: 4, path: '\\.seg$' }])
  const pre = await preSession(base)
  const signed = await dash(
    '/signup',
    { email: 'late@example.com', password: 'long enough pw' },
    pre.cookie,
    pre.token,
  )
  t.equal(signed.status, 201, 'a sign-up whose session the disk refused still shows its key')
  await arm([])
  t.ok(await healed())
  const api = new Client(srv.baseUrl, signed.json.apiKey.secret)
  t.equal((await api.get('/namespaces')).status, 200, 'and the key works')

  // A password change: never the new password with an old session still standing.
  for (const nth of [1, 2]) {
    const password = `password number ${nth}`
    const old = nth === 1 ? 'long enough pw' : 'password number 1'
    const a = await logIn(base, 'late@example.com', old)
    const b = await logIn(base, 'late@example.com', old)
    t.equal(b.status, 200)
    await arm([{ op: 'fsync', code: 'EIO', nth, path: '\\.seg$' }])
    const changed = await dash('/password', { current: old, password }, a.cookie!, a.csrf)
    await arm([])
    t.ok(await healed())
    if (changed.status === 200) continue
    const newWorks = (await logIn(base, 'late@example.com', password)).status === 200
    const bStands = (await me(b.cookie!)) === 200
    t.notOk(
      newWorks && bStands,
      `nth ${nth}: refused (${changed.status}), no old session beside a new password`,
    )
    if (!newWorks)
      t.equal(
        (await dash('/password', { current: old, password }, a.cookie!, a.csrf)).status,
        200,
        'and it can be done again',
      )
  }

  // An account delete refused at its commit leaves the account and all its data.
  await api.createNamespace('kept')
  await api.mustPut('kept', 'k', 'v')
  const owner = await logIn(base, 'late@example.com', 'password number 2')
  const deleteAccount = () =>
    dash(
      '/account/delete',
      { confirm: 'late@example.com', password: 'password number 2' },
      owner.cookie!,
      owner.csrf,
    )
  await arm([{ op: 'fsync', code: 'EIO', nth: 1, path: '\\.seg$' }])
  t.equal((await deleteAccount()).status, 503, 'the delete is refused')
  await arm([])
  t.ok(await healed())
  t.equal((await api.get('/kept/k')).json?.value, 'v', 'the data is all there')
  t.equal((await deleteAccount()).status, 200, 'and the delete can be done again')
  t.equal((await api.get('/namespaces')).status, 401, 'after which the key is gone')
})

t.test('a stop while storage is failing still exits cleanly and removes LOCK', async (t) => {
  const { srv, client, arm } = await faultyServer(t)
  let api = client()
  await api.createNamespace('s')
  await api.mustPut('s', 'a', 1)
  await arm([{ op: 'fsync', code: 'EIO' }])
  t.equal((await api.put('/s/b', { value: 2 })).status, 503)
  const exit = await srv.terminate()
  t.equal(exit.code, 0, 'SIGTERM exits 0 with the disk still failing')
  t.notOk(fs.existsSync(path.join(srv.dataDir, 'LOCK')), 'LOCK is gone')
  await arm([])
  await srv.start()
  api = client()
  t.equal((await api.get('/s/a')).json?.value, 1)
  t.equal((await api.get('/s/b')).status, 404)
})

t.test('a damaged record answers 500 saying so, and cairn repair recovers the rest', async (t) => {
  const srv = await startServer({ plans: plansFile() })
  t.teardown(() => srv.stop())
  const acct = await srv.createAccount()
  let api = new Client(srv.baseUrl, acct.apiKey)
  await api.createNamespace('d')
  const marker = `DAMAGE-ME-${process.pid}-${Date.now()}`
  const keep: Record<string, string> = {}
  for (let i = 0; i < 50; i++) {
    keep[`k${i}`] = `value ${i}`
    await api.mustPut('d', `k${i}`, `value ${i}`)
    if (i === 25) await api.mustPut('d', 'victim', marker)
  }
  t.equal((await srv.terminate()).code, 0)

  // Flip one byte of the victim's value in whichever segment holds it.
  let flipped = false
  for (const name of fs.readdirSync(srv.dataDir)) {
    if (!name.endsWith('.seg')) continue
    const file = path.join(srv.dataDir, name)
    const bytes = fs.readFileSync(file)
    const at = bytes.indexOf(marker)
    if (at < 0) continue
    bytes[at + 3] ^= 0x20
    fs.writeFileSync(file, bytes)
    flipped = true
  }
  t.ok(flipped, 'found the record to damage')

  await srv.start()
  api = new Client(srv.baseUrl, acct.apiKey)
  const res = await api.get('/d/victim')
  t.equal(res.status, 500, 'reading a damaged record is a 500')
  t.equal(res.json?.error?.code, 'internal_error')
  t.match(res.json?.error?.message, /damaged/, 'the message says the data is damaged')
  t.match(res.json?.error?.message, /cairn repair/, 'and names the way out')
  t.notMatch(res.text, /\.seg|\/tmp|at .*\.ts/, 'no file names or stack in the answer')
  t.equal((await api.get('/d/k3')).json?.value, 'value 3', 'other keys read fine')
  const metrics = await (await fetch(`${srv.url}/metrics`)).text()
  t.match(metrics, /cairn_engine_corrupt_reads_total [1-9]/, 'the damage is counted')
  t.equal((await srv.terminate()).code, 0)

  const report = JSON.parse(cli('repair', '--data', srv.dataDir, '--json'))
  const victim = report.dropped.find((d: { key?: string }) => d.key === 'victim')
  t.ok(victim, `repair names the dropped key (${JSON.stringify(report.dropped)})`)
  t.match(victim?.file, /\.seg$/, 'and its file')
  t.equal(typeof victim?.offset, 'number', 'and its offset')
  t.equal(report.dropped.length, 1, 'it drops nothing else')

  await srv.start()
  api = new Client(srv.baseUrl, acct.apiKey)
  t.equal((await api.get('/d/victim')).status, 404, 'the damaged key is gone')
  for (const [key, value] of Object.entries(keep)) {
    const got = await api.get(`/d/${key}`)
    if (got.json?.value !== value) t.fail(`${key} after repair: ${got.status} ${got.text}`)
  }
  t.pass('every intact key survived repair')
})

t.test('cairn repair refuses a data directory a server holds', async (t) => {
  const srv = await startServer({ plans: plansFile() })
  t.teardown(() => srv.stop())
  try {
    cli('repair', '--data', srv.dataDir)
    t.fail('repair ran on a live directory')
  } catch (err) {
    const e = err as { status: number; stderr: string }
    t.equal(e.status, 1)
    t.match(e.stderr, /in use by a running server; stop it/)
  }
})

t.test('a namespace deleted while a resume reads its history: the resume is refused', async (t) => {
  const { srv, client, arm } = await faultyServer(t)
  let api = client()
  await api.createNamespace('w')
  for (let i = 1; i <= 20; i++) await api.mustPut('w', `k${i % 3}`, i)
  // After a restart the feed holds nothing: a resume reads the namespace's history from disk.
  await srv.restart()
  api = client()
  t.equal((await api.get('/w/k1')).status, 200)
  await arm([{ op: 'read', hold: true, path: '\\.seg$|\\.hst$' }])
  const resume = api.get('/w?watch=1&since=1', { headers: { accept: 'text/event-stream' } })
  await sleep(300)
  t.equal((await api.del('/namespaces/w')).status, 200, 'deleted while its history is read')
  await api.createNamespace('w')
  await api.mustPut('w', 'new', 1)
  await arm([])
  const res = await resume
  t.equal(res.status, 404, 'the resume is answered 404, not a stream of the new namespace')
  t.equal(res.json?.error?.code, 'namespace_not_found')
})
