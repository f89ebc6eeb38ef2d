// The OpenAPI document: valid OpenAPI 3.1 by a real validator, served as-is at
// /v1/openapi.json, naming every error code the server has, and describing what the
// running server really answers (status, headers, body schema) for every operation.
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import SwaggerParser from '@apidevtools/swagger-parser'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'
import t, { type Test } from 'tap'
import { Client, type Res, sendLargeBody } from './contract/http.js'
import { plansFile, setup } from './contract/setup.js'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const docPath = path.join(root, 'server/openapi.json')
const raw = JSON.parse(fs.readFileSync(docPath, 'utf8'))

type Json = any

t.test('the document is valid OpenAPI 3.1', async (t) => {
  t.equal(raw.openapi.slice(0, 4), '3.1.')
  const api = await SwaggerParser.validate(structuredClone(raw))
  t.ok(api.paths, 'validated')
  const broken = structuredClone(raw)
  broken.paths['/usage'].get.responses['200'].content['application/json'].schema = {
    $ref: '#/components/schemas/Nothing',
  }
  await t.rejects(SwaggerParser.validate(broken), 'the validator does catch a broken reference')
})

t.test('security schemes: x-api-key and Bearer', async (t) => {
  t.same(raw.components.securitySchemes.apiKey, {
    type: 'apiKey',
    in: 'header',
    name: 'x-api-key',
    description: raw.components.securitySchemes.apiKey.description,
  })
  t.equal(raw.components.securitySchemes.bearer.scheme, 'bearer')
  t.same(raw.security, [{ apiKey: [] }, { bearer: [] }])
})

t.test('the error code enum is exactly the server table of codes', async (t) => {
  const errors: Json = await import('../../server/wire/errors.js')
  const table = errors.ERRORS ?? errors.errors ?? errors.errorTable ?? errors.default
  t.ok(table, 'server/wire/errors.ts exports its table')
  const codes = Array.isArray(table) ? table.map((e: Json) => e.code) : Object.keys(table)
  t.same(
    [...raw.components.schemas.ErrorCode.enum].sort(),
    [...codes, ...errors.STREAM_CODES].sort(),
  )
  for (const code of codes) {
    const entry = Array.isArray(table) ? table.find((e: Json) => e.code === code) : table[code]
    const schema = raw.components.schemas[`Error${entry.status}`]
    t.ok(schema, `an Error${entry.status} schema for ${code}`)
    t.ok(
      schema?.allOf[1].properties.error.properties.code.enum.includes(code),
      `${code} belongs to ${entry.status}`,
    )
  }
})

const { srv, api } = await setup(t, {
  plans: plansFile(
    { id: 'slow', ratePerSecond: 1, burst: 2 },
    { id: 'tiny', maxStorageBytes: 100, maxValueBytes: 50 },
  ),
})

t.test('the server serves this document at /v1/openapi.json, without a key', async (t) => {
  const res = await api.get('/openapi.json', { key: null })
  t.equal(res.status, 200)
  t.match(res.headers['content-type'], /^application\/json/)
  t.same(res.json, raw)
})

const doc: Json = await SwaggerParser.dereference(structuredClone(raw))
const addFormats = (addFormatsModule as Json).default ?? addFormatsModule
const ajv = new Ajv2020({ strict: false, allErrors: true })
addFormats(ajv)
const compiled = new WeakMap<object, ReturnType<typeof ajv.compile>>()
function validator(schema: object) {
  let v = compiled.get(schema)
  if (!v) {
    v = ajv.compile(schema)
    compiled.set(schema, v)
  }
  return v
}

const seen = new Set<string>()

/** Checks one real response against the document's description of that operation. */
function conforms(t: Test, method: string, template: string, res: Res) {
  const what = `${method} ${template} -> ${res.status}`
  const op = doc.paths[template]?.[method.toLowerCase()]
  // A method a route does not take is answered as components.responses.MethodNotAllowed says.
  const spec =
    op?.responses[String(res.status)] ??
    (!op && res.status === 405 && doc.paths[template]
      ? doc.components.responses.MethodNotAllowed
      : undefined)
  if (!spec) {
    t.fail(`${what} is not documented (body ${res.text.slice(0, 200)})`)
    return
  }
  seen.add(`${method} ${template} ${res.status}`)
  for (const [name, header] of Object.entries<Json>(spec.headers ?? {})) {
    const value = res.headers[name.toLowerCase()]
    if (value === undefined) {
      if (header.required) t.fail(`${what}: missing header ${name}`)
      continue
    }
    const v = validator(header.schema)
    if (!v(String(value)))
      t.fail(`${what}: header ${name}: ${String(value)} ${ajv.errorsText(v.errors)}`)
  }
  const media = spec.content?.['application/json']
  if (media) {
    t.match(res.headers['content-type'], /^application\/json/, `${what}: content-type`)
    const v = validator(media.schema)
    const ok = v(res.json)
    t.ok(
      ok,
      `${what}: body matches the schema${ok ? '' : `: ${ajv.errorsText(v.errors)} in ${res.text.slice(0, 300)}`}`,
    )
  } else {
    t.equal(res.text, '', `${what}: no body`)
  }
}

t.test('real responses match the document', async (t) => {
  const check = (method: string, template: string, res: Res) => conforms(t, method, template, res)
  const ns = '/{namespace}'
  const key = '/{namespace}/{key}'

  check('POST', '/namespaces', await api.post('/namespaces', { name: 'docs' }))
  check('POST', '/namespaces', await api.post('/namespaces', { name: 'docs' }))
  check('POST', '/namespaces', await api.post('/namespaces', { name: 'bad.name' }))
  check('POST', '/namespaces', await api.post('/namespaces', '{'))
  check(
    'POST',
    '/namespaces',
    await api.post('/namespaces', { name: 'x' }, { headers: { 'content-type': 'text/plain' } }),
  )
  check('GET', '/namespaces', await api.get('/namespaces'))
  check('GET', '/namespaces', await api.get('/namespaces', { key: null }))
  check('PUT', '/namespaces', await api.put('/namespaces', { value: 1 }))

  const put = await api.put('/docs/a', { value: { n: 1 }, ttl: 3600 })
  check('PUT', key, put)
  check('PUT', key, await api.put('/docs/a', { value: 2 }))
  check('PUT', key, await api.put('/docs/a', { value: 3 }, { headers: { 'if-none-match': '*' } }))
  check('PUT', key, await api.put('/docs/b', '{"value":'))
  check('PUT', key, await api.put('/docs/b', {}))
  check('PUT', key, await api.put('/docs/b', { value: 1, ttl: 0 }))
  check('PUT', key, await api.put('/docs/a%00', { value: 1 }))
  check('PUT', key, await api.put('/nosuch/b', { value: 1 }))
  check(
    'PUT',
    key,
    await api.put('/docs/b', { value: 1 }, { headers: { 'content-type': 'text/plain' } }),
  )
  check('PUT', key, await api.put('/docs/b', `{"value":"${'x'.repeat(1024 * 1024 + 10)}"}`))
  check('POST', key, await api.post('/docs/b', { value: 1 }))

  const withTtl = await api.put('/docs/t', { value: 't', ttl: 3600 })
  const got = await api.get('/docs/t')
  check('GET', key, got)
  t.ok(got.headers['x-expires-at'], 'X-Expires-At checked against its schema')
  check(
    'GET',
    key,
    await api.get('/docs/t', { headers: { 'if-none-match': `"${withTtl.json.version}"` } }),
  )
  check('GET', key, await api.get('/docs/missing'))
  check('GET', key, await api.get('/nosuch/x'))
  check('GET', key, await api.get('/docs/%FF'))
  check('GET', key, await api.get('/docs/t', { key: 'cairn_wrong' }))

  check('DELETE', key, await api.del('/docs/t', { headers: { 'if-match': '"nope"' } }))
  check('DELETE', key, await api.del('/docs/t'))
  check('DELETE', key, await api.del('/docs/t'))

  for (let i = 0; i < 5; i++) await api.put(`/docs/p${i}`, { value: i })
  const page = await api.get('/docs?limit=2&prefix=p')
  check('GET', ns, page)
  check(
    'GET',
    ns,
    await api.get(`/docs?limit=2&prefix=p&cursor=${encodeURIComponent(page.json.cursor)}`),
  )
  check('GET', ns, await api.get('/docs?limit=0'))
  check('GET', ns, await api.get('/docs?cursor=%%%'))
  check('GET', ns, await api.get('/nosuch'))
  check('PUT', ns, await api.put('/docs', { value: 1 }))

  // History and restore.
  const then = (await api.put('/docs/h', { value: 'old', metadata: { v: 1 } })).json.version
  await api.put('/docs/h', { value: 'new', ttl: 3600 })
  check('GET', key, await api.get(`/docs/h?at=${then}&metadata=1`))
  check('GET', key, await api.get('/docs/h?history=1&limit=1'))
  check('GET', key, await api.get('/docs/h?at=nope'))
  check('GET', key, await api.get('/docs/h?at=1970-01-01T00:00:00Z'))
  check('GET', ns, await api.get(`/docs?at=${then}&include=values,metadata&limit=1`))
  check('GET', ns, await api.get('/docs?at=1970-01-01T00:00:00Z'))
  const now = (await api.get('/docs?limit=1')).json.version
  check('POST', ns, await api.post('/docs?restore=1', { at: now, prefix: 'h' }))
  check('POST', ns, await api.post('/docs?restore=1', { at: 'soon' }))
  check('POST', ns, await api.post('/docs?restore=1', { at: '1970-01-01T00:00:00Z' }))

  // The additions: metadata, PATCH, transactions, entries, deleting by prefix.
  check('PUT', key, await api.put('/docs/m', { value: 1, metadata: { a: 1 } }))
  check('PUT', key, await api.put('/docs/m', { value: 1, metadata: [1] }))
  check('GET', key, await api.get('/docs/m?metadata=1'))
  check('PATCH', key, await api.req('PATCH', '/docs/n', { body: { increment: 2 } }))
  check('PATCH', key, await api.req('PATCH', '/docs/n', { body: { increment: 2, ttl: 60 } }))
  check(
    'PATCH',
    key,
    await api.req('PATCH', '/docs/m', { body: { persist: true, metadata: null } }),
  )
  check('PATCH', key, await api.req('PATCH', '/docs/m', { body: { increment: 1.5 } }))
  check('PATCH', key, await api.req('PATCH', '/docs/m', { body: { nope: 1 } }))
  check('PATCH', key, await api.req('PATCH', '/docs/missing', { body: { ttl: 5 } }))
  check('PATCH', key, await api.req('PATCH', '/docs/a', { body: { increment: 1 } }))
  check(
    'PATCH',
    key,
    await api.req('PATCH', '/docs/m', { body: { ttl: 5 }, headers: { 'if-match': '"999"' } }),
  )
  const ops = [
    { op: 'check', key: 'm', version: null },
    { op: 'get', key: 'm', metadata: true },
    { op: 'get', key: 'nothing' },
    { op: 'put', key: 'tx', value: { x: 1 }, ttl: 60, metadata: { t: 1 } },
    { op: 'increment', key: 'count', by: 3 },
    { op: 'delete', key: 'nothing' },
  ]
  const txDone = await api.post('/docs', { ops: ops.slice(1) })
  t.equal(txDone.status, 200, txDone.text)
  check('POST', ns, txDone)
  check('POST', ns, await api.post('/docs', { ops }))
  check('POST', ns, await api.post('/docs', { ops: [] }))
  check('POST', ns, await api.post('/docs', { ops: [{ op: 'increment', key: 'm', by: 1 }] }))
  check('GET', ns, await api.get('/docs?include=values,metadata&limit=2'))
  check('GET', ns, await api.get('/docs?include=metadata&reverse=1'))
  check(
    'GET',
    ns,
    await api.get('/docs?watch=1&since=1', { headers: { accept: 'application/json' } }),
  )
  check('DELETE', ns, await api.del('/docs?prefix=p'))
  check('DELETE', ns, await api.del('/docs'))

  check('GET', '/usage', await api.get('/usage'))
  check('POST', '/usage', await api.post('/usage', {}))

  const origin = { origin: 'https://app.example', 'access-control-request-method': 'PUT' }
  check('OPTIONS', key, await api.req('OPTIONS', '/docs/a', { key: null, headers: origin }))
  check('OPTIONS', ns, await api.req('OPTIONS', '/docs', { key: null, headers: origin }))
  check(
    'OPTIONS',
    '/namespaces',
    await api.req('OPTIONS', '/namespaces', { key: null, headers: origin }),
  )
  check('OPTIONS', '/usage', await api.req('OPTIONS', '/usage', { key: null, headers: origin }))
  check(
    'OPTIONS',
    '/namespaces/{name}',
    await api.req('OPTIONS', '/namespaces/docs', { key: null, headers: origin }),
  )

  const ro = new Client(srv.baseUrl, (await srv.createAccount(undefined, { plan: 'tiny' })).apiKey)
  check('POST', '/namespaces', await ro.post('/namespaces', { name: 'tiny' }))
  check('PUT', key, await ro.put('/tiny/a', { value: 'x'.repeat(40) }))
  check('PUT', key, await ro.put('/tiny/b', { value: 'x'.repeat(40) }))
  const putTiny = await ro.put('/tiny/c', { value: 'x'.repeat(40) })
  check('PUT', key, putTiny)
  t.equal(putTiny.status, 403, 'the storage quota was reached')
  check('PUT', key, await ro.put('/tiny/d', { value: 'y'.repeat(60) }))
  const base = new URL(srv.baseUrl).pathname
  check(
    'PUT',
    key,
    await sendLargeBody(
      srv.baseUrl,
      'PUT',
      `${base}/tiny/e`,
      { 'x-api-key': ro.key },
      Buffer.alloc(4 * 1024 * 1024, 32),
    ),
  )

  const slow = new Client(
    srv.baseUrl,
    (await srv.createAccount(undefined, { plan: 'slow' })).apiKey,
  )
  const burst = await Promise.all(Array.from({ length: 6 }, () => slow.get('/namespaces')))
  for (const res of burst) check('GET', '/namespaces', res)
  t.ok(
    burst.some((r) => r.status === 429),
    'a 429 was checked',
  )

  check('DELETE', '/namespaces/{name}', await api.del('/namespaces/nosuch'))
  check('GET', '/namespaces/{name}', await api.get('/namespaces/docs'))
  check('DELETE', '/namespaces/{name}', await api.del('/namespaces/docs'))
})

t.test('the /upstash routes answer as documented', async (t) => {
  const ns = 'upstashdocs'
  await api.createNamespace(ns)
  const send = async (method: string, rest: string, body?: string): Promise<Res> => {
    const res = await fetch(`${srv.url}/upstash/${ns}${rest}`, {
      method,
      headers: { authorization: `Bearer ${api.key}`, 'upstash-encoding': 'base64' },
      body,
    })
    const text = await res.text()
    const headers: Record<string, string> = {}
    res.headers.forEach((v, k) => {
      headers[k] = v
    })
    let json: Json
    try {
      json = JSON.parse(text)
    } catch {}
    return { status: res.status, headers, text, json } as Res
  }
  const one = '/upstash/{namespace}'
  conforms(t, 'POST', one, await send('POST', '', '["SET","k","v"]'))
  conforms(t, 'POST', one, await send('POST', '', '["MGET","k","x"]'))
  conforms(t, 'POST', one, await send('POST', '', '["INCR","k"]'))
  conforms(
    t,
    'POST',
    '/upstash/{namespace}/pipeline',
    await send('POST', '/pipeline', '[["GET","k"],["NOPE"]]'),
  )
  conforms(
    t,
    'POST',
    '/upstash/{namespace}/multi-exec',
    await send('POST', '/multi-exec', '[["GET","k"],["TTL","k"]]'),
  )
  conforms(
    t,
    'POST',
    '/upstash/{namespace}/multi-exec',
    await send('POST', '/multi-exec', '[["INCR","k"]]'),
  )
  conforms(t, 'GET', '/upstash/{namespace}/{command}', await send('GET', '/get/k'))
  conforms(t, 'POST', '/upstash/{namespace}/{command}', await send('POST', '/set/k', 'value'))
})

t.test('every documented success status was seen', async (t) => {
  for (const [template, item] of Object.entries<Json>(doc.paths)) {
    for (const method of ['get', 'put', 'post', 'patch', 'delete', 'options']) {
      const op = item[method]
      if (!op) continue
      for (const status of Object.keys(op.responses)) {
        if (!/^[23]/.test(status)) continue
        const seenIt = seen.has(`${method.toUpperCase()} ${template} ${status}`)
        if (template === '/openapi.json') continue
        t.ok(
          seenIt,
          `${method.toUpperCase()} ${template} ${status} was checked against a real response`,
        )
      }
    }
  }
})
