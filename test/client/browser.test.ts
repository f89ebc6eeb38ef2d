// The bundled client in headless Chromium, on a page from another origin than the API:
// every call crosses origins, so this proves the server's CORS answers are enough for it
// (preflight with x-api-key, x-request-id, if-match and if-none-match; the exposed ETag and
// X-Expires-At headers). The bundle is minified, as sites ship it, so the error classes
// must keep their names through that.
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import { build } from 'esbuild'
import t from 'tap'
import { launchChromium, skip } from '../helpers/browser.js'
import { account, nsName, root, server } from './helpers.js'

async function pageServer(t: Tap): Promise<string> {
  const bundle = await build({
    entryPoints: [path.join(root, 'client/src/index.ts')],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    minify: true,
    write: false,
  })
  const js = bundle.outputFiles[0]!.text
  const srv = http.createServer((req, res) => {
    if (req.url === '/cairn.js') {
      res.writeHead(200, { 'content-type': 'text/javascript' })
      res.end(js)
    } else {
      res.writeHead(200, { 'content-type': 'text/html' })
      res.end('<!doctype html><title>cairn-client</title><p>client test page</p>')
    }
  })
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise((r) => srv.close(r)))
  return `http://127.0.0.1:${(srv.address() as AddressInfo).port}/`
}

interface Tap {
  teardown(fn: () => unknown): void
}

t.test('the client works in a browser across origins', { skip }, async (t) => {
  const srv = await server(t)
  const closed = await server(t, { args: ['--cors-origins', 'http://allowed.example'] })
  const { apiKey } = await account(srv)
  const other = await account(closed)
  const pageUrl = await pageServer(t)
  t.not(
    new URL(pageUrl).origin,
    new URL(srv.baseUrl).origin,
    'page and API are on different origins',
  )

  const browser = await launchChromium(t)
  const page = await browser.newPage()
  await page.goto(pageUrl)

  const ns = nsName('browser')
  const out = await page.evaluate(
    async ({ baseUrl, apiKey, ns }) => {
      const { Cairn, NotFoundError } = await import('/cairn.js' as string)
      const kv = new Cairn(apiKey, { baseUrl, retries: false })
      await kv.createNamespace(ns)
      const put = await kv.put(
        ns,
        'a/b?c#d %🪨',
        { big: 12345678901234567890n, s: 'x' },
        { ttl: 600 },
      )
      const hit = await kv.get(ns, 'a/b?c#d %🪨')
      const swapped = await kv.put(ns, 'a/b?c#d %🪨', 'second', { ifMatch: hit.version })
      const lost = await kv
        .put(ns, 'a/b?c#d %🪨', 'third', { ifMatch: hit.version })
        .catch((e: any) => `${e.name} ${e.code}`)
      const createOnly = await kv
        .put(ns, 'a/b?c#d %🪨', 'fourth', { ifNoneMatch: '*' })
        .catch((e: any) => `${e.name} ${e.code}`)
      const keys: string[] = []
      for await (const k of kv.keys(ns)) keys.push(k)
      const err = await kv.get(`${ns}-missing`, 'k').catch((e: unknown) => e)
      const deleted = await kv.delete(ns, 'a/b?c#d %🪨')
      const usage = await kv.usage()
      // Refused before the key is known: that answer must carry CORS headers too, or the
      // page would only see a network error.
      const stranger = new Cairn(`cairn_${'x'.repeat(32)}`, { baseUrl, retries: false })
      const denied = await stranger
        .namespaces()
        .catch((e: any) => `${e.name} ${e.status} ${e.code}`)
      return {
        origin: location.origin,
        created: put.created,
        versionMatches: hit.version === put.version && put.version !== '',
        big: String(hit.value.big),
        s: hit.value.s,
        expiresAt: typeof hit.expiresAt,
        keys,
        swapped: swapped.created,
        lost,
        createOnly,
        notFound: err instanceof NotFoundError,
        name: err.name,
        code: err.code,
        requestId: typeof err.requestId === 'string' && err.requestId.length > 0,
        deleted,
        plan: usage.plan.id,
        denied,
      }
    },
    { baseUrl: srv.baseUrl, apiKey, ns },
  )
  t.same(out, {
    origin: new URL(pageUrl).origin,
    created: true,
    versionMatches: true,
    big: '12345678901234567890',
    s: 'x',
    expiresAt: 'number',
    keys: ['a/b?c#d %🪨'],
    swapped: false,
    lost: 'ConflictError precondition_failed',
    createOnly: 'ConflictError precondition_failed',
    notFound: true,
    name: 'NotFoundError',
    code: 'namespace_not_found',
    requestId: true,
    deleted: true,
    plan: 'free',
    denied: 'AuthError 401 unauthorized',
  })

  const refused = await page.evaluate(
    async ({ baseUrl, apiKey }) => {
      const { Cairn } = await import('/cairn.js' as string)
      const kv = new Cairn(apiKey, { baseUrl, retries: false })
      const e = await kv.namespaces().then(
        () => null,
        (e: any) => ({ name: e.name, code: e.code, status: e.status }),
      )
      return e
    },
    { baseUrl: closed.baseUrl, apiKey: other.apiKey },
  )
  t.same(
    refused,
    { name: 'NetworkError', code: 'network_error', status: 0 },
    'an origin the server does not allow is refused by the browser',
  )
})
