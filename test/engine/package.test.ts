// The engine as a package: `npm pack` the root package as a publish would (its build
// included), put the tarball's files into a fresh project outside the repository, and use
// `cairn/engine` and `cairn/level` the way a user does: an ESM program written in TypeScript,
// type-checked against the shipped declarations and run. The project's dependencies are the
// ones the packed manifest names, linked from this repository's install (an offline stand-in
// for `npm install`, which would fetch them); nothing else is there, so a dev dependency
// the engine needed would show. The bin starts the server from the packed files.
import { execFile, spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { repoRoot, sleep } from './helpers.js'

const run = promisify(execFile)

t.test('cairn/engine and cairn/level from the packed package, with types', async (t) => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-engine-pkg-'))
  t.teardown(() => fs.rmSync(tmp, { recursive: true, force: true }))
  const packed = await run('npm', ['pack', '--json', '--pack-destination', tmp], {
    cwd: repoRoot,
    maxBuffer: 1 << 26,
  })
  const [info] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('['))) as {
    filename: string
    files: { path: string }[]
  }[]
  const files = info!.files.map((f) => f.path)
  for (const f of [
    'package.json',
    'dist/engine/index.js',
    'dist/engine/index.d.ts',
    'dist/engine/level/index.js',
    'dist/engine/level/index.d.ts',
    'dist/server/cli/index.js',
    'engine/README.md',
  ])
    t.ok(files.includes(f), `the tarball holds ${f}`)
  t.same(
    files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts')),
    [],
    'no TypeScript sources, only the build and its declarations',
  )
  t.same(
    files.filter((f) => f.startsWith('dist/test') || f.startsWith('test/')),
    [],
    'no tests',
  )

  const pkg = path.join(tmp, 'node_modules', 'cairn')
  fs.mkdirSync(pkg, { recursive: true })
  await run('tar', ['-xzf', path.join(tmp, info!.filename), '-C', pkg, '--strip-components=1'])
  const manifest = JSON.parse(fs.readFileSync(path.join(pkg, 'package.json'), 'utf8'))
  t.same(Object.keys(manifest.exports).sort(), ['./engine', './level', './package.json'])
  for (const dep of Object.keys(manifest.dependencies))
    fs.symlinkSync(path.join(repoRoot, 'node_modules', dep), path.join(tmp, 'node_modules', dep))
  // The project's own dev dependency, as any TypeScript program on Node has.
  fs.mkdirSync(path.join(tmp, 'node_modules/@types'))
  fs.symlinkSync(
    path.join(repoRoot, 'node_modules/@types/node'),
    path.join(tmp, 'node_modules/@types/node'),
  )
  fs.writeFileSync(path.join(tmp, 'package.json'), '{ "type": "module", "private": true }\n')

  fs.writeFileSync(
    path.join(tmp, 'use.ts'),
    `import { EngineError, open, type Db, type GetResult } from 'cairn/engine'
import { CairnLevel } from 'cairn/level'

const dir = process.argv[2]!
const db: Db = await open(dir + '/engine', { durability: 'always' })
await db.createNamespace('sessions')
const { version } = await db.put('sessions', 'user/42', { theme: 'dark' })
const got: GetResult | undefined = db.getNow('sessions', 'user/42')
const conflict = await db
  .put('sessions', 'user/42', 1, { ifVersion: version + 1 })
  .catch((e: unknown) => (e instanceof EngineError ? e.code : 'other'))
// @ts-expect-error a namespace is named by a string
void (() => db.put(7, 'k', 1))
await db.close()

const level = new CairnLevel<string, { n: number }>(dir + '/level', { valueEncoding: 'json' })
await level.batch([
  { type: 'put', key: 'b', value: { n: 2 } },
  { type: 'put', key: 'a', value: { n: 1 } },
  { type: 'put', key: 'c', value: { n: 3 } },
])
const n: number = (await level.get('a'))!.n
const range = await level.iterator({ gt: 'a', reverse: true }).all()
const bin = new CairnLevel<Uint8Array, Uint8Array>(dir + '/bin', { keyEncoding: 'view', valueEncoding: 'view' })
await bin.put(new Uint8Array([0, 255]), new Uint8Array([1, 2, 3]))
const bytes = Array.from((await bin.get(new Uint8Array([0, 255])))!)
// @ts-expect-error values of this database are { n: number }
void (() => level.put('d', 'text'))
await level.close()
await bin.close()
console.log(JSON.stringify({ value: got?.value, conflict, n, range, bytes, supports: level.supports.implicitSnapshots }))
`,
  )
  fs.writeFileSync(
    path.join(tmp, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        module: 'nodenext',
        moduleResolution: 'nodenext',
        target: 'es2022',
        types: ['node'],
        outDir: 'out',
      },
      files: ['use.ts'],
    }),
  )
  const tsc = path.join(repoRoot, 'node_modules/typescript/bin/tsc')
  const typed = await run(process.execPath, [tsc, '-p', path.join(tmp, 'tsconfig.json')], {
    cwd: tmp,
  }).then(
    () => 'ok',
    (e) => e.stdout,
  )
  t.equal(typed, 'ok', 'the program type-checks against the shipped declarations, not `any`')

  const data = path.join(tmp, 'data')
  fs.mkdirSync(data)
  const out = await run(process.execPath, [path.join(tmp, 'out/use.js'), data], { cwd: tmp })
  t.same(JSON.parse(out.stdout), {
    value: { theme: 'dark' },
    conflict: 'CONFLICT',
    n: 1,
    range: [
      ['c', { n: 3 }],
      ['b', { n: 2 }],
    ],
    bytes: [1, 2, 3],
    supports: false,
  })

  const deep = await run(
    process.execPath,
    [
      '-e',
      `import('cairn/dist/engine/db.js').then(() => console.log('deep'), (e) => console.log(e.code))`,
    ],
    { cwd: tmp },
  )
  t.equal(deep.stdout.trim(), 'ERR_PACKAGE_PATH_NOT_EXPORTED', 'only the exports map is public')

  // The bin from the same files: the server starts, answers, and its dashboard assets are there.
  const serverData = path.join(tmp, 'server-data')
  const proc = spawn(
    process.execPath,
    [
      path.join(pkg, manifest.bin.cairn),
      'serve',
      '--port',
      '0',
      '--host',
      '127.0.0.1',
      '--data',
      serverData,
    ],
    { cwd: tmp, stdio: ['ignore', 'ignore', 'pipe'] },
  )
  let stderr = ''
  proc.stderr.on('data', (c) => {
    stderr += c
  })
  t.teardown(() => proc.kill('SIGKILL'))
  const serverFile = path.join(serverData, 'server.json')
  for (let i = 0; i < 300 && !fs.existsSync(serverFile) && proc.exitCode === null; i++)
    await sleep(100)
  t.ok(fs.existsSync(serverFile), `the packed server started${stderr ? `: ${stderr}` : ''}`)
  const { port } = JSON.parse(fs.readFileSync(serverFile, 'utf8'))
  const health = await fetch(`http://127.0.0.1:${port}/healthz`)
  t.equal(health.status, 200, 'it answers /healthz')
  const page = await fetch(`http://127.0.0.1:${port}/assets/style.css`)
  t.equal(page.status, 200, 'and serves the dashboard from the packed assets')
  proc.kill('SIGTERM')
  await new Promise((r) => proc.once('exit', r))
})
