// Run after `npm install` changes package-lock.json: the registry this project installs from
// serves only linux-x64 builds, so npm leaves the other platforms' optional packages out of
// the lock, and `npm ci` then refuses the lock as out of sync. This adds those entries back
// (os/cpu tagged, so every platform skips the ones not meant for it).
import fs from 'node:fs'
const lock = JSON.parse(fs.readFileSync('package-lock.json', 'utf8'))
const pk = lock.packages
for (const [loc, meta] of Object.entries(pk)) {
  for (const [name, range] of Object.entries(meta.optionalDependencies ?? {})) {
    const base = loc ? loc + '/node_modules/' + name : 'node_modules/' + name
    if (pk[base] || pk['node_modules/' + name]) continue
    const m = /-(android|darwin|linux|win32|freebsd)-(arm64|x64|arm|ia32)(-musl)?$/.exec(name)
    if (!m) {
      console.log('skip', name)
      continue
    }
    const e = {
      version: range.replace(/^[\^~]/, ''),
      dev: meta.dev || undefined,
      optional: true,
      os: [m[1]],
      cpu: [m[2]],
    }
    if (m[3]) e.libc = ['musl']
    pk['node_modules/' + name] = e
    console.log('added', name, e.version)
  }
}
const sorted = {}
for (const k of Object.keys(pk).sort((a, b) =>
  a === '' ? -1 : b === '' ? 1 : a < b ? -1 : a > b ? 1 : 0,
))
  sorted[k] = pk[k]
lock.packages = sorted
fs.writeFileSync('package-lock.json', JSON.stringify(lock, null, 2) + '\n')
