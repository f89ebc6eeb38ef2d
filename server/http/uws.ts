// Loads uWebSockets.js's native binary directly. The package's own entry point quietly
// falls back to a slow pure-JS server when the binary does not load; Cairn would rather
// not start than serve at a fraction of its speed, so it skips that entry point.
import { createRequire } from 'node:module'
import path from 'node:path'
import type * as Uws from 'uWebSockets.js'

const require = createRequire(import.meta.url)

function loadNative(): typeof Uws {
  const pkg = path.dirname(require.resolve('uWebSockets.js/package.json'))
  const binary = path.join(
    pkg,
    'binaries',
    `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`,
  )
  try {
    return require(binary)
  } catch (err) {
    throw new Error(
      `uWebSockets.js has no native build for this platform (${binary}: ${(err as Error).message}). ` +
        'Cairn refuses to run on its slow JavaScript fallback; use Node.js 20 on linux, macOS or Windows (x64 or arm64).',
    )
  }
}

export const uws = loadNative()
export type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket } from 'uWebSockets.js'
