// Builds dist/esm (ES modules) and dist/cjs (CommonJS), each with its .d.ts files.
// Usage: node scripts/build.mjs [--out DIR]   (DIR defaults to ./dist beside this package)
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const pkgDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const outFlag = process.argv.indexOf('--out')
const out = outFlag > 0 ? path.resolve(process.argv[outFlag + 1]) : path.join(pkgDir, 'dist')
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')

fs.rmSync(out, { recursive: true, force: true })
for (const [config, dir] of [
  ['tsconfig.json', 'esm'],
  ['tsconfig.cjs.json', 'cjs'],
]) {
  execFileSync(
    process.execPath,
    [tsc, '-p', path.join(pkgDir, config), '--outDir', path.join(out, dir)],
    { stdio: 'inherit' },
  )
}
// The package is "type": "module"; this marker makes Node read dist/cjs/*.js (and their
// .d.ts files, for TypeScript) as CommonJS.
fs.writeFileSync(path.join(out, 'cjs', 'package.json'), '{ "type": "commonjs" }\n')

// Every file the exports map names (each entry point, `cairn-client/keyv` included) must
// have been built: a missing one would only show when a user imports it.
const manifest = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8'))
const named = []
const walk = (v) => (typeof v === 'string' ? named.push(v) : Object.values(v).forEach(walk))
walk(manifest.exports)
for (const file of named.filter((f) => f.startsWith('./dist/'))) {
  const built = path.join(out, file.slice('./dist/'.length))
  if (!fs.existsSync(built))
    throw new Error(`build: ${file} is in the exports map but was not built`)
}
