// The published shape: `npm pack` the package as a publish would (its prepack build
// included), install the tarball into a temp node_modules, then use it the way users do:
// import (ESM), require (CommonJS) and type-check against its declarations, each talking
// to a real server.
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { account, nsName, root, server } from './helpers.js'

const run = promisify(execFile)

t.test('ESM, CommonJS and type declarations from the packed package', async (t) => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-client-pkg-'))
  t.teardown(() => fs.rmSync(tmp, { recursive: true, force: true }))
  const packed = await run('npm', ['pack', '--json', '--pack-destination', tmp], {
    cwd: path.join(root, 'client'),
  })
  const [info] = JSON.parse(packed.stdout) as { filename: string; files: { path: string }[] }[]
  const files = info!.files.map((f) => f.path).sort()
  for (const f of [
    'package.json',
    'README.md',
    'dist/esm/index.js',
    'dist/esm/index.d.ts',
    'dist/cjs/index.js',
    'dist/cjs/index.d.ts',
    'dist/cjs/package.json',
    'dist/esm/keyv.js',
    'dist/esm/keyv.d.ts',
    'dist/cjs/keyv.js',
    'dist/cjs/keyv.d.ts',
  ]) {
    t.ok(files.includes(f), `the tarball holds ${f}`)
  }
  t.same(
    files.filter(
      (f) =>
        !f.startsWith('dist/') &&
        f !== 'package.json' &&
        f !== 'README.md' &&
        f !== 'bin/cairn-kv.mjs',
    ),
    [],
    'nothing but dist, the cairn-kv bin, the README and the manifest (no sources, scripts or tsconfig)',
  )

  const pkg = path.join(tmp, 'node_modules', 'cairn-client')
  fs.mkdirSync(pkg, { recursive: true })
  await run('tar', ['-xzf', path.join(tmp, info!.filename), '-C', pkg, '--strip-components=1'])
  const manifest = JSON.parse(fs.readFileSync(path.join(pkg, 'package.json'), 'utf8'))
  t.equal(manifest.name, 'cairn-client')
  t.same(manifest.dependencies ?? {}, {}, 'no runtime dependencies')
  t.same(manifest.peerDependencies, { keyv: '^5.5.4' }, 'keyv is the one peer dependency')
  t.same(
    manifest.peerDependenciesMeta,
    { keyv: { optional: true } },
    'and it is optional: only cairn-client/keyv uses it',
  )
  // Keyv as the application installs it beside the client.
  fs.symlinkSync(path.join(root, 'node_modules/keyv'), path.join(tmp, 'node_modules/keyv'), 'dir')

  const srv = await server(t)
  const { apiKey, kv } = await account(srv)
  const env = { ...process.env, CAIRN_URL: srv.baseUrl, CAIRN_API_KEY: apiKey }
  const body = (ns: string) => `
    const kv = new Cairn()
    await kv.createNamespace('${ns}')
    const put = await kv.put('${ns}', 'k/1', { n: 12345678901234567890n })
    const hit = await kv.get('${ns}', 'k/1')
    const err = await kv.get('missing-${ns}', 'k').catch((e) => e)
    const raw = await kv.putRaw('${ns}', 'raw', '"a","ttl":1').catch((e) => e)
    console.log(JSON.stringify({
      rawRefused: raw instanceof CairnError && raw.code === 'invalid_json',
      rawAbsent: (await kv.get('${ns}', 'raw')) === null,
      created: put.created,
      n: String(hit.value.n), bigint: typeof hit.value.n,
      notFound: err instanceof NotFoundError && err instanceof CairnError, code: err.code,
    }))`
  const expected = {
    rawRefused: true,
    rawAbsent: true,
    created: true,
    n: '12345678901234567890',
    bigint: 'bigint',
    notFound: true,
    code: 'namespace_not_found',
  }

  fs.writeFileSync(
    path.join(tmp, 'esm.mjs'),
    `import { Cairn, CairnError, NotFoundError } from 'cairn-client'\n${body(nsName('esm'))}\n`,
  )
  const esm = await run(process.execPath, [path.join(tmp, 'esm.mjs')], { cwd: tmp, env })
  t.same(JSON.parse(esm.stdout), expected, 'import() of the ESM build works against the server')

  fs.writeFileSync(
    path.join(tmp, 'cjs.cjs'),
    `const { Cairn, CairnError, NotFoundError } = require('cairn-client')\n` +
      `;(async () => {${body(nsName('cjs'))}\n})().catch((e) => { console.error(e); process.exit(1) })\n`,
  )
  const cjs = await run(process.execPath, [path.join(tmp, 'cjs.cjs')], { cwd: tmp, env })
  t.same(
    JSON.parse(cjs.stdout),
    expected,
    'require() of the CommonJS build works against the server',
  )

  const check = await run(
    process.execPath,
    [
      '-e',
      `const a = require('cairn-client'); import('cairn-client').then((b) => {
         console.log(JSON.stringify({ cjs: typeof a.Cairn, esm: typeof b.Cairn, same: a.Cairn === b.Cairn }))
         try { require('cairn-client/dist/cjs/client.js'); console.log('deep') } catch (e) { console.log(e.code) }
         console.log(typeof require('cairn-client/keyv').KeyvCairn)
       })`,
    ],
    { cwd: tmp },
  )
  const [formats, deep, keyvExport] = check.stdout.trim().split('\n')
  t.same(
    JSON.parse(formats!),
    { cjs: 'function', esm: 'function', same: false },
    'the exports map picks a format per loader',
  )
  t.equal(deep, 'ERR_PACKAGE_PATH_NOT_EXPORTED', 'only the exports map is public')
  t.equal(keyvExport, 'function', 'cairn-client/keyv is in the exports map')

  // cairn-client/keyv: the Keyv store, in both formats, over the same server.
  const keyvNs = nsName('keyv-pkg')
  await kv.createNamespace(keyvNs)
  const keyvEnv = { ...env, KEYV_NS: keyvNs }
  const keyvBody = (tag: string) => `
    const store = new KeyvCairn({ url: process.env.CAIRN_URL, apiKey: process.env.CAIRN_API_KEY, namespace: process.env.KEYV_NS })
    const keyv = new Keyv({ store, namespace: '${tag}' })
    const errors = []
    keyv.on('error', (e) => errors.push(e.code))
    await keyv.set('k', { n: 1, s: 'caf\u00e9' }, 60000)
    const got = await keyv.get('k')
    const listed = []
    for await (const [key] of store.iterator('${tag}')) listed.push(key)
    const bad = new Keyv({ store: new KeyvCairn({ url: process.env.CAIRN_URL, apiKey: 'cairn_wrong', namespace: process.env.KEYV_NS }) })
    bad.on('error', (e) => errors.push(e.code))
    const missed = await bad.get('k')
    console.log(JSON.stringify({ got, listed, missed: missed === undefined, errors, dialect: store.opts.dialect }))`
  const keyvExpected = (tag: string) => ({
    got: { n: 1, s: 'café' },
    listed: [`${tag}:k`],
    missed: true,
    errors: ['unauthorized'],
    dialect: 'cairn',
  })
  fs.writeFileSync(
    path.join(tmp, 'keyv-esm.mjs'),
    `import Keyv from 'keyv'\nimport { KeyvCairn } from 'cairn-client/keyv'\n${keyvBody('esm')}\n`,
  )
  const keyvEsm = await run(process.execPath, [path.join(tmp, 'keyv-esm.mjs')], {
    cwd: tmp,
    env: keyvEnv,
  })
  t.same(JSON.parse(keyvEsm.stdout), keyvExpected('esm'), 'cairn-client/keyv by import()')
  fs.writeFileSync(
    path.join(tmp, 'keyv-cjs.cjs'),
    `const { Keyv } = require('keyv')\nconst { KeyvCairn } = require('cairn-client/keyv')\n` +
      `;(async () => {${keyvBody('cjs')}\n})().catch((e) => { console.error(e); process.exit(1) })\n`,
  )
  const keyvCjs = await run(process.execPath, [path.join(tmp, 'keyv-cjs.cjs')], {
    cwd: tmp,
    env: keyvEnv,
  })
  t.same(JSON.parse(keyvCjs.stdout), keyvExpected('cjs'), 'cairn-client/keyv by require()')

  // TypeScript users: both module systems resolve the declarations, and they are not `any`.
  fs.writeFileSync(path.join(tmp, 'package.json'), '{ "type": "module" }\n')
  const typed = `
    const kv = new Cairn('key', { baseUrl: 'http://localhost:8080/v1', retries: { limit: 2 } })
    async function main() {
      const hit = await kv.get<{ user: number }>('sessions', 'abc')
      const n: number | undefined = hit?.value.user
      const page = await kv.list('sessions', { prefix: 'a' })
      const keys: string[] = page.keys
      const e: unknown = null
      if (e instanceof RateLimitError) { const s: number | undefined = e.retryAfter; void s }
      const cached = await kv.get<{ user: number }>('sessions', 'abc', { ifNoneMatch: '7' })
      const fresh = cached !== null && 'notModified' in cached ? undefined : cached?.value.user
      const u = await kv.usage()
      const counted: number = u.today.watchEvents + u.days[0]!.operations.transaction
      // @ts-expect-error a plain get is never "not modified"
      const never: { notModified: true } | null = await kv.get('sessions', 'abc')
      // @ts-expect-error ttl is a number
      await kv.put('sessions', 'abc', 1, { ttl: 'soon' })
      // @ts-expect-error get has no such option
      await kv.get('sessions', 'abc', { ttl: 1 })
      // A builder started as a chain, then filled in a loop, declared as the README says.
      const tx: Transaction<TxResult[]> = kv.transaction('sessions').check('a', null)
      for (const k of keys) tx.put(k, 1)
      const done = await tx.commit()
      const last: TxResult | undefined = done.results[keys.length]
      return [n, keys, fresh, counted, never, last]
    }
    void main`
  fs.writeFileSync(
    path.join(tmp, 'use.ts'),
    `import { Cairn, RateLimitError, type Transaction, type TxResult } from 'cairn-client'\n${typed}\n`,
  )
  fs.writeFileSync(
    path.join(tmp, 'use.cts'),
    `import cairn = require('cairn-client')\nconst { Cairn, RateLimitError } = cairn\ntype TxResult = cairn.TxResult\ntype Transaction<R extends TxResult[]> = cairn.Transaction<R>\n${typed}\n`,
  )
  const typedKeyv = `
    const store = new KeyvCairn({ url: 'http://localhost:8080', apiKey: 'key', namespace: 'cache' })
    const keyv = new Keyv<{ user: number }>({ store, namespace: 'sessions' })
    async function main() {
      const hit = await keyv.get('abc')
      const n: number | undefined = hit?.user
      const ok: boolean = await store.set('sessions:abc', '{"value":1}', 1000)
      for await (const [key, value] of store.iterator('sessions')) void [key.length, value]
      // @ts-expect-error the Cairn namespace is required
      new KeyvCairn({ url: 'http://localhost:8080' })
      // @ts-expect-error url is a string
      new KeyvCairn({ url: 8080, namespace: 'cache' })
      return [n, ok]
    }
    void main`
  fs.writeFileSync(
    path.join(tmp, 'keyv.ts'),
    `import Keyv from 'keyv'\nimport { KeyvCairn } from 'cairn-client/keyv'\n${typedKeyv}\n`,
  )
  fs.writeFileSync(
    path.join(tmp, 'keyv.cts'),
    `import keyvPkg = require('keyv')\nimport cairnKeyv = require('cairn-client/keyv')\nconst { Keyv } = keyvPkg\nconst { KeyvCairn } = cairnKeyv\n${typedKeyv}\n`,
  )
  fs.writeFileSync(
    path.join(tmp, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        noEmit: true,
        strict: true,
        module: 'nodenext',
        moduleResolution: 'nodenext',
        target: 'es2022',
        lib: ['es2022', 'dom'],
        types: [],
      },
      files: ['use.ts', 'use.cts', 'keyv.ts', 'keyv.cts'],
    }),
  )
  const tsc = path.join(root, 'node_modules/typescript/bin/tsc')
  const types = await run(process.execPath, [tsc, '-p', path.join(tmp, 'tsconfig.json')]).then(
    () => 'ok',
    (e) => e.stdout,
  )
  t.equal(
    types,
    'ok',
    'ESM and CommonJS declarations type-check, and are not `any`, cairn-client/keyv included',
  )
})
