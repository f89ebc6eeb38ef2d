// The dashboard's static files, read once at start, with an ETag and a gzip copy each,
// so a page load costs a few small cached responses. uPlot comes from node_modules.
import { createHash } from 'node:crypto'
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'
import type { Reply, Req } from '../http/pipeline.js'

interface Asset {
  type: string
  body: Buffer
  gzip: Buffer
  etag: string
}

const TYPES: Record<string, string> = {
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  svg: 'image/svg+xml',
  html: 'text/html; charset=utf-8',
}

/** server/dashboard/public, also when running from dist/ (tsc copies no assets). */
export function publicDir(): string {
  const here = dirname(fileURLToPath(import.meta.url))
  const candidates = [
    join(here, 'public'),
    join(here, '..', '..', '..', 'server', 'dashboard', 'public'),
  ]
  const found = candidates.find((d) => existsSync(d))
  if (!found) throw new Error(`dashboard assets not found (looked in ${candidates.join(', ')})`)
  return found
}

function load(body: Buffer, type: string): Asset {
  return {
    type,
    body,
    gzip: gzipSync(body, { level: 9 }),
    etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 16)}"`,
  }
}

export class Assets {
  private files = new Map<string, Asset>()
  readonly version: string

  constructor() {
    const root = publicDir()
    const walk = (dir: string) => {
      for (const name of readdirSync(dir)) {
        const full = join(dir, name)
        if (statSync(full).isDirectory()) walk(full)
        else {
          const ext = name.split('.').pop() ?? ''
          if (TYPES[ext])
            this.files.set(
              relative(root, full).split(sep).join('/'),
              load(readFileSync(full), TYPES[ext]),
            )
        }
      }
    }
    walk(root)
    const require = createRequire(import.meta.url)
    const uplotJs = require.resolve('uplot/dist/uPlot.iife.min.js')
    this.files.set('vendor/uPlot.iife.min.js', load(readFileSync(uplotJs), TYPES.js!))
    this.files.set(
      'vendor/uPlot.min.css',
      load(readFileSync(join(dirname(uplotJs), 'uPlot.min.css')), TYPES.css!),
    )
    const all = createHash('sha256')
    for (const a of this.files.values()) all.update(a.etag)
    this.version = all.digest('base64url').slice(0, 10)
  }

  serve(req: Req, name: string): Reply | undefined {
    const a = this.files.get(name)
    if (!a) return undefined
    const headers: Record<string, string> = {
      'Content-Type': a.type,
      ETag: a.etag,
      'Cache-Control': 'no-cache',
      Vary: 'Accept-Encoding',
    }
    if (req.headers['if-none-match'] === a.etag) return { status: 304, headers }
    if (/\bgzip\b/.test(req.headers['accept-encoding'] ?? '')) {
      return { status: 200, headers: { ...headers, 'Content-Encoding': 'gzip' }, body: a.gzip }
    }
    return { status: 200, headers, body: a.body }
  }
}
