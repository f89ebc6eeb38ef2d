// Moving up: `cairn migrate` copies an embedded database into Redis Cluster, and a front end
// on Redis then serves the same accounts, keys and values: every value byte for byte, its
// version (ETag) and expiry, the order of listings, dashboard passwords and usage. A run cut
// short resumes. And the account, key and plan commands work on Redis directly (--store).
import fs from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { cairn, json } from '../helpers/cli.js'
import { logIn } from '../helpers/dashboard-api.js'
import { plansFile } from '../helpers/plans.js'
import { clusterFor } from '../helpers/redis-cluster.js'
import { startServer } from '../helpers/server.js'
import { Client, encodeKey, sleep } from '../server/contract/http.js'

const cluster = await clusterFor(t)
if (cluster) {
  const plans = plansFile({ id: 'pro' })

  t.test('cairn migrate: an embedded database, carried over whole', async (t) => {
    const embedded = await startServer({ plans })
    t.teardown(() => embedded.stop())
    const first = await embedded.createAccount('first@example.com', { password: 'first password' })
    const second = await embedded.createAccount('second@example.com', { plan: 'pro' })
    const api1 = new Client(embedded.baseUrl, first.apiKey)
    const api2 = new Client(embedded.baseUrl, second.apiKey)
    await api1.createNamespace('prefs')
    await api1.createNamespace('empty')
    await api2.createNamespace('prefs')
    const texts = [
      '12345678901234567890123456789012345678901234567890',
      '{"b":1,"a":[1,2,{"é":"😀"}]}',
      '"line\\nbreak"',
      'null',
      '-0.0',
    ]
    const before = new Map<string, { text: string; etag: string; expires?: string }>()
    for (let i = 0; i < 1200; i++) {
      const key = i % 3 === 0 ? `user/${i}` : i % 3 === 1 ? `été/${i}` : `k${i}`
      const text = texts[i % texts.length]!
      const body = i % 50 === 0 ? `{"value":${text},"ttl":3600}` : `{"value":${text}}`
      await api1.put(`/prefs/${encodeKey(key)}`, body)
    }
    await api1.del('/prefs/k2')
    // The last writes of a namespace may be deletes: its version is then above every entry's.
    await api1.put('/empty/gone', '{"value":1}')
    await api1.del('/empty/gone')
    await api2.put('/prefs/only', '{"value":"second account"}')
    for (const key of await api1.listAll('prefs')) {
      const got = await api1.get(`/prefs/${encodeKey(key)}`)
      before.set(key, {
        text: got.text,
        etag: String(got.headers.etag),
        expires: got.headers['x-expires-at'] as string | undefined,
      })
    }
    const order = await api1.listAll('prefs')
    const sourceVersion = Number((await api1.get('/prefs')).json.version)
    await sleep(600)
    const usageBefore = (await api1.get('/usage')).json.today.operations
    await embedded.terminate()

    const run = await cairn([
      'migrate',
      '--from-data',
      embedded.dataDir,
      '--to',
      cluster.url,
      '--json',
    ])
    t.equal(run.code, 0, run.stderr)
    const report = json(run)
    t.equal(report.accounts, 2)
    t.equal(report.namespaces, 3)
    t.equal(report.entries, before.size + 1, 'every live entry of both accounts')
    t.same(report.mismatched, [], 'the key counts agree')
    t.equal(report.alreadyMigrated, false)
    const progressFile = path.join(embedded.dataDir, 'migrate-progress.json')
    t.match(JSON.parse(fs.readFileSync(progressFile, 'utf8')), { done: String }, 'marked done')

    const onRedis = await startServer({ plans, args: ['--store', cluster.url] })
    t.teardown(() => onRedis.stop())
    const r1 = new Client(onRedis.baseUrl, first.apiKey)
    const r2 = new Client(onRedis.baseUrl, second.apiKey)
    t.same(await r1.listAll('prefs'), order, 'the same keys in the same order')
    let differ = 0
    for (const [key, b] of before) {
      const got = await r1.get(`/prefs/${encodeKey(key)}`)
      const same =
        got.text === b.text &&
        String(got.headers.etag) === b.etag &&
        (got.headers['x-expires-at'] as string | undefined) === b.expires
      if (!same && differ++ < 3)
        t.fail(`${key}: ${got.text} ${got.headers.etag} vs ${b.text} ${b.etag}`)
    }
    t.equal(differ, 0, `${before.size} values byte for byte, with their versions and expiries`)
    t.equal((await r1.get('/prefs/k2')).status, 404, 'a deleted key stays deleted')
    t.equal((await r2.get('/prefs/only')).json.value, 'second account')
    const names = (await r1.get('/namespaces')).json.namespaces.map((n: any) => n.name)
    t.same(names, ['empty', 'prefs'])
    const next = await r1.put('/prefs/user/0', '{"value":1}')
    t.equal(
      Number(JSON.parse(next.text).version),
      sourceVersion + 1,
      "a new write takes the version after the namespace's own, past its last delete",
    )

    // The same command again, once the front ends write to Redis: nothing is copied over them.
    const last = order[order.length - 1]!
    const newer = await r1.put(`/prefs/${encodeKey(last)}`, '{"value":"written on Redis"}')
    const rerun = json(
      await cairn(['migrate', '--from-data', embedded.dataDir, '--to', cluster.url, '--json']),
    )
    t.equal(rerun.alreadyMigrated, true, 'a finished migration is not run again')
    t.equal(rerun.entries, 0)
    const kept = await r1.get(`/prefs/${encodeKey(last)}`)
    t.equal(kept.json.value, 'written on Redis', "the front end's write stands")
    t.equal(kept.headers.etag, `"${JSON.parse(newer.text).version}"`)
    const usage = (await r1.get('/usage')).json.today.operations
    t.ok(usage.put >= usageBefore.put, `usage carried over (${usage.put} puts)`)
    t.equal(
      (await logIn(onRedis.url, 'first@example.com', 'first password')).status,
      200,
      'the dashboard password works',
    )
    const plan = json(
      await cairn([
        'key',
        'list',
        '--email',
        'second@example.com',
        '--store',
        cluster.url,
        '--json',
      ]),
    )
    t.equal(plan.keys.length, 1, 'the key list, read on Redis directly')

    // A migration cut short: the progress file says where it stopped, and a run resumes.
    const ns = `u/${first.accountId}/prefs`
    fs.writeFileSync(
      path.join(embedded.dataDir, 'migrate-progress.json'),
      JSON.stringify({
        target: cluster.url,
        accounts: [first.accountId, second.accountId],
        namespaces: { [ns]: order[600] },
      }),
    )
    const again = json(
      await cairn(['migrate', '--from-data', embedded.dataDir, '--to', cluster.url, '--json']),
    )
    t.equal(again.resumed, true, 'the second run resumed')
    t.equal(again.accounts, 2)
    t.ok(again.entries < before.size, `it copied only what was left (${again.entries})`)
    t.same(again.mismatched, [])
    const after = await r1.get(`/prefs/${encodeKey(last)}`)
    t.equal(after.json.value, 'written on Redis', 'a copy never replaces a newer entry')
    t.equal(after.headers.etag, kept.headers.etag)
    const listed = Number((await r1.get('/prefs')).json.version)
    t.ok(listed >= Number(JSON.parse(newer.text).version), 'nor moves the version back')
    // Last: a key written here would make the counts of a later run disagree.
    const emptyNext = await r1.put('/empty/again', '{"value":1}')
    t.equal(JSON.parse(emptyNext.text).version, '3', 'a namespace of deletes only: versions go on')
  })

  t.test(
    'account, key and plan commands on Redis directly, with front ends running or not',
    async (t) => {
      const store = ['--store', cluster.url, '--plans']
      const plansPath = path.join(
        fs.mkdtempSync(path.join(process.env.TMPDIR ?? '/tmp', 'plans-')),
        'p.json',
      )
      fs.writeFileSync(plansPath, JSON.stringify(plans))
      const made = json(
        await cairn([
          'account',
          'create',
          '--email',
          'ops@example.com',
          ...store,
          plansPath,
          '--json',
        ]),
      )
      t.match(made.apiKey.secret, /^cairn_/)
      const front = await startServer({ plans, args: ['--store', cluster.url] })
      t.teardown(() => front.stop())
      const api = new Client(front.baseUrl, made.apiKey.secret)
      t.equal(
        (await api.get('/namespaces')).status,
        200,
        'a front end knows the account made by the command',
      )
      const extra = json(
        await cairn([
          'key',
          'create',
          '--email',
          'ops@example.com',
          '--name',
          'ci',
          ...store,
          plansPath,
          '--json',
        ]),
      )
      t.equal((await new Client(front.baseUrl, extra.secret).get('/namespaces')).status, 200)
      t.equal(
        (
          await cairn([
            'key',
            'revoke',
            '--email',
            'ops@example.com',
            '--id',
            extra.key.id,
            ...store,
            plansPath,
          ])
        ).code,
        0,
      )
      await sleep(1200)
      t.equal(
        (await new Client(front.baseUrl, extra.secret).get('/namespaces')).status,
        401,
        'revoked from the command line, refused by the front end',
      )
      t.equal(
        (await cairn(['plan', 'set', '--email', 'ops@example.com', 'pro', ...store, plansPath]))
          .code,
        0,
      )
      const list = json(await cairn(['account', 'list', ...store, plansPath, '--json']))
      const ops = list.accounts.find((a: any) => a.email === 'ops@example.com')
      t.equal(ops.plan, 'pro')
      t.equal(ops.keys, 1)
      const compact = await cairn(['compact', ...store, plansPath])
      t.not(compact.code, 0, 'compaction is for the embedded engine')
      t.match(compact.stderr, /embedded/)
    },
  )
}
