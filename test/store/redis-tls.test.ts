// rediss://: Cairn on a Redis Cluster that speaks only TLS. The test makes its own certificate
// authority and a certificate for 127.0.0.1 with openssl, starts a one-node cluster with
// `tls-cluster yes` and no plain port, and trusts the authority the way an operator with a
// private CA would: NODE_EXTRA_CA_CERTS (docs/scale-out.md). Writes and reads go through;
// plain redis:// to the same port is refused at start with a message.
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { Client } from '../server/contract/http.js'
import { startServer } from '../helpers/server.js'
import { root } from '../helpers/server.js'

const has = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0
if (!has('redis-server') || !has('redis-cli') || !has('openssl')) {
  t.comment('redis-server, redis-cli or openssl is not installed: rediss:// is not tested')
  t.pass('skipped: apt-get install -y redis-server openssl')
} else {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-tls-'))
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }))
  const ssl = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' })
  ssl([
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-days',
    '2',
    '-subj',
    '/CN=cairn-test-ca',
  ])
  ssl([
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'redis.key',
    '-out',
    'redis.csr',
    '-subj',
    '/CN=127.0.0.1',
  ])
  fs.writeFileSync(path.join(dir, 'ext.cnf'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n')
  ssl([
    'x509',
    '-req',
    '-in',
    'redis.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'redis.crt',
    '-days',
    '2',
    '-extfile',
    'ext.cnf',
  ])

  const port = await new Promise<number>((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port
      s.close(() => resolve(p))
    })
  })
  const redis = spawn(
    'redis-server',
    [
      '--port',
      '0',
      '--tls-port',
      String(port),
      '--tls-cert-file',
      'redis.crt',
      '--tls-key-file',
      'redis.key',
      '--tls-ca-cert-file',
      'ca.crt',
      '--tls-auth-clients',
      'no',
      '--tls-cluster',
      'yes',
      '--cluster-enabled',
      'yes',
      '--cluster-announce-ip',
      '127.0.0.1',
      '--appendonly',
      'yes',
      '--appendfsync',
      'always',
      '--dir',
      dir,
      '--save',
      '',
    ],
    { cwd: dir, stdio: 'ignore' },
  )
  t.teardown(() => redis.kill('SIGKILL'))
  const cli = (...args: string[]) =>
    execFileSync('redis-cli', ['--tls', '--cacert', 'ca.crt', '-p', String(port), ...args], {
      cwd: dir,
      encoding: 'utf8',
    })
  for (let i = 0; i < 100; i++) {
    try {
      if (cli('ping').trim() === 'PONG') break
    } catch {}
    await new Promise((r) => setTimeout(r, 50))
  }
  cli('cluster', 'addslotsrange', '0', '16383')
  for (let i = 0; i < 100 && !cli('cluster', 'info').includes('cluster_state:ok'); i++)
    await new Promise((r) => setTimeout(r, 100))

  const env = { NODE_EXTRA_CA_CERTS: path.join(dir, 'ca.crt') }

  t.test(
    'a front end on rediss:// stores and reads, with the cluster speaking TLS only',
    async (t) => {
      const srv = await startServer({ args: ['--store', `rediss://127.0.0.1:${port}`], env })
      t.teardown(() => srv.stop())
      const made = await srv.createAccount()
      const api = new Client(srv.baseUrl, made.apiKey)
      await api.createNamespace('tls')
      t.equal((await api.put('/tls/k', { value: { over: 'tls' } })).status, 201)
      t.equal((await api.get('/tls/k')).text, '{"value":{"over":"tls"}}')
      t.equal(
        (await api.req('PATCH', '/tls/n', { body: { increment: 2 } })).text,
        '{"version":"2","value":2}',
      )
    },
  )

  t.test('plain redis:// to a TLS-only port is refused at start, saying so', async (t) => {
    const out = spawnSync(
      process.execPath,
      [
        '--import',
        'tsx',
        path.join(root, 'server/cli.ts'),
        'serve',
        '--store',
        `redis://127.0.0.1:${port}`,
        '--port',
        '0',
        '--data',
        path.join(dir, 'plain'),
      ],
      { cwd: root, encoding: 'utf8', timeout: 60_000, env: { ...process.env, ...env } },
    )
    t.not(out.status, 0, 'it does not start')
    t.match(out.stderr + out.stdout, /not ready|refused|closed|Redis/i, 'and says why')
  })
}
