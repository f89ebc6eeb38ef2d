// Starting on Redis: Cairn refuses a cluster whose configuration cannot keep the durability
// asked for, saying which node to fix, and runs every kind of write with the one it can keep;
// it connects with a user and password in the URL, and
// a wrong password stops it with a message that does not repeat the password.
import { execFileSync } from 'node:child_process'
import t from 'tap'
import { plansFile } from '../helpers/plans.js'
import { clusterFor } from '../helpers/redis-cluster.js'
import { startServer } from '../helpers/server.js'
import { Client } from '../server/contract/http.js'

const cluster = await clusterFor(t)
if (cluster) {
  const onEvery = (...args: string[]) => {
    for (const n of cluster.nodes) execFileSync('redis-cli', ['-p', String(n.port), ...args])
  }
  const plans = plansFile()

  t.test('durability always is refused on a node without appendfsync always', async (t) => {
    const node = cluster.nodes[0]!
    execFileSync('redis-cli', ['-p', String(node.port), 'CONFIG', 'SET', 'appendfsync', 'everysec'])
    t.teardown(() => onEvery('CONFIG', 'SET', 'appendfsync', 'always'))
    const refused = await startServer({ plans, args: ['--store', cluster.url] }).then(
      async (s) => {
        await s.stop()
        return ''
      },
      (err: Error) => err.message,
    )
    t.match(refused, /cannot keep --durability always/, 'it does not start')
    t.match(
      refused,
      new RegExp(`127\\.0\\.0\\.1:${node.port} has appendfsync everysec`),
      'and names the node',
    )
    const interval = await startServer({
      plans,
      args: ['--store', cluster.url, '--durability', 'interval'],
    })
    t.teardown(() => interval.stop())
    const acct = await interval.createAccount()
    const c = new Client(interval.baseUrl, acct.apiKey)
    t.equal((await c.get('/namespaces')).status, 200, 'interval accepts everysec')
    // Writes without a WAIT take the master's connection too (durable-writes.ts): each kind.
    await c.createNamespace('iv')
    t.equal((await c.put('/iv/a', { value: 1 })).status, 201, 'a PUT')
    t.equal((await c.req('PATCH', '/iv/a', { body: { increment: 2 } })).status, 200, 'an increment')
    const tx = await c.post('/iv', {
      ops: [
        { op: 'put', key: 'b', value: 'x' },
        { op: 'increment', key: 'a', by: 4 },
      ],
    })
    t.equal(tx.status, 200, 'a transaction')
    t.equal((await c.del('/iv/b')).status, 200, 'a DELETE')
    const got = await c.get('/iv/a')
    t.equal(got.status, 200)
    t.same(JSON.parse(got.text).value, 7, 'every write applied once: 1 + 2 + 4')
    t.equal((await c.get('/iv/b')).status, 404, 'the deleted key is gone')
  })

  t.test('a user and password in the URL; a wrong one is refused without echoing it', async (t) => {
    onEvery('ACL', 'SETUSER', 'cairn', 'on', '>s3cret-pass', '~*', '&*', '+@all')
    const url = cluster.url.replace('redis://', 'redis://cairn:s3cret-pass@')
    const srv = await startServer({ plans, args: ['--store', url] })
    t.teardown(() => srv.stop())
    const acct = await srv.createAccount()
    t.equal((await new Client(srv.baseUrl, acct.apiKey).get('/namespaces')).status, 200)
    t.notOk(srv.lines.join('\n').includes('s3cret-pass'), 'the password is not logged')
    const wrong = cluster.url.replace('redis://', 'redis://cairn:not-the-pass@')
    const failed = await startServer({ plans, args: ['--store', wrong] }).then(
      async (s) => {
        await s.stop()
        return ''
      },
      (err: Error) => err.message,
    )
    t.not(failed, '', 'a wrong password does not start')
    t.notOk(failed.includes('not-the-pass'), 'and the message does not repeat it')
  })
}
