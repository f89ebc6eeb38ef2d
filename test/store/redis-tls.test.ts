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

  // A free port whose cluster bus port (10000 above it) is free too; a server that does not
  // answer within 15 s (a loaded machine, a port taken meanwhile) is replaced on another.
  const bindable = (p: number) =>
    new Promise<boolean>((resolve) => {
      const s = net.createServer()
      s.once('error', () => resolve(false))
      s.listen(p, '127.0.0.1', () => s.close(() => resolve(true)))
    })
  const freePort = async (): Promise<number> => {
    for (;;) {
      const p = await new Promise<number>((resolve) => {
        const s = net.createServer().listen(0, '127.0.0.1', () => {
          const q = (s.address() as net.AddressInfo).port
          s.close(() => resolve(q))
        })
      })
      if (p + 10000 <= 65535 && (await bindable(p + 10000))) return p
    }
  }
  const start = (port: number) =>
    spawn(
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
  let port = 0
  let redis: ReturnType<typeof spawn> | undefined
  t.teardown(() => redis?.kill('SIGKILL'))
  const cli = (...args: string[]) =>
    execFileSync('redis-cli', ['--tls', '--cacert', 'ca.crt', '-p', String(port), ...args], {
      cwd: dir,
      encoding: 'utf8',
    })
  for (let attempt = 0; attempt < 3; attempt++) {
    port = await freePort()
    redis = start(port)
    let up = false
    for (let i = 0; i < 150 && !up; i++) {
      try {
        up = cli('ping').trim() === 'PONG'
      } catch {}
      if (!up) await new Promise((r) => setTimeout(r, 100))
    }
    if (up) break
    redis.kill('SIGKILL')
    // Its files, so the next one starts a cluster of its own.
    for (const f of fs.readdirSync(dir))
      if (f.startsWith('nodes') || f.startsWith('appendonly'))
        fs.rmSync(path.join(dir, f), { recursive: true, force: true })
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
        path.join(root, 'server/cli/index.ts'),
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
