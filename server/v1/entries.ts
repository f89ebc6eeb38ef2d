// GET, PUT and DELETE /v1/{namespace}/{key}. A value is stored as its JSON text and read
// back as bytes, so the response body is `{"value":` + the stored text + `}` with no
// parsing or re-serialising on the way.
import type { GetResult } from '../../engine/types.js'
import type { NamespaceInfo } from '../accounts.js'
import type { HttpRequest } from '../http/uws.js'
import type { Plan } from '../plans.js'
import { acceptsJson, readRequestBody } from './body.js'
import type { Call } from './call.js'
import { matches, parseTags } from './conditions.js'
import { type PutBody, parsePutBody } from './json-body.js'
import { type Parsed, decodeKey } from './paths.js'

const HEAD = Buffer.from('{"value":')
const TAIL = 0x7d // }
/** Room for the body's envelope and whitespace around a value of the plan's largest size. */
const SLACK = 64 * 1024
/** The most a body may be when the plan sets no value limit. */
const UNLIMITED_BODY = 256 * 1024 * 1024

/** The key of an Entry route, or undefined after answering 400 invalid_key. */
function keyOf(call: Call, parsed: Parsed): string | undefined {
  const key = decodeKey(parsed.rawKey)
  if (key === undefined) {
    call.fail(
      'invalid_key',
      'A key is 1 to 512 bytes of UTF-8 after percent-decoding, without control characters or "." and ".." segments.',
    )
  }
  return key
}

function canUse(call: Call, ns: string, write: boolean): boolean {
  const k = call.key!
  if ((write && !k.canWrite) || !k.allows(ns)) {
    call.fail(
      'forbidden',
      write && !k.canWrite
        ? 'This API key may only read.'
        : `This API key may not use namespace "${ns}".`,
    )
    return false
  }
  return true
}

const etag = (version: number) => `"${version}"`

/** The caller's namespace, or undefined after answering 404 namespace_not_found. */
export function namespaceOf(call: Call, ns: string): NamespaceInfo | undefined {
  const info = call.account!.namespaces.get(ns)
  if (info === undefined) call.fail('namespace_not_found', `There is no namespace "${ns}".`)
  return info
}

export function getEntry(call: Call, req: HttpRequest, parsed: Parsed): void {
  const ns = parsed.ns
  if (!canUse(call, ns, false)) return
  const key = keyOf(call, parsed)
  if (key === undefined) return
  const inm = req.getHeader('if-none-match')
  const info = namespaceOf(call, ns)
  if (info === undefined) return
  const data = call.ctx.data
  // An engine that can answer at once is asked synchronously: no promise, no registration
  // for an abort, the answer written while uWebSockets.js still has the socket corked.
  if (data.readsNow) {
    let got: GetResult | undefined
    try {
      got = data.getNow(info, key)
    } catch (err) {
      return call.error(err)
    }
    return answerGet(call, got, inm)
  }
  call.async()
  data.get(info, key).then(
    (got) => answerGet(call, got, inm),
    (err) => call.error(err),
  )
}

function answerGet(call: Call, got: GetResult | undefined, inm: string): void {
  if (got === undefined)
    return call.fail('key_not_found', 'There is no such key in this namespace.')
  const tag = etag(got.version)
  const lines =
    got.expiresAt === undefined
      ? `\r\nETag: ${tag}`
      : `\r\nETag: ${tag}\r\nX-Expires-At: ${Math.ceil(got.expiresAt / 1000)}`
  if (inm !== '') {
    const tags = parseTags(inm)
    if (tags !== undefined && matches(tags, got.version)) return call.empty(304, lines)
  }
  const v = got.value as Buffer
  const body = Buffer.allocUnsafe(v.length + 10)
  HEAD.copy(body, 0)
  v.copy(body, 9)
  body[v.length + 9] = TAIL
  call.send(200, body, lines)
}

export function putEntry(call: Call, req: HttpRequest, parsed: Parsed, plan: Plan): void {
  const ns = parsed.ns
  if (!canUse(call, ns, true)) return
  const key = keyOf(call, parsed)
  if (key === undefined) return
  if (!acceptsJson(call, req)) return
  const ifMatch = parseTags(req.getHeader('if-match'))
  const ifNoneMatch = parseTags(req.getHeader('if-none-match'))
  const info = namespaceOf(call, ns)
  if (info === undefined) return
  const max = plan.maxValueBytes
  const limit = max === null ? UNLIMITED_BODY : max + Math.min(max, SLACK)
  readRequestBody(call, req, limit, (body) => {
    let parsedBody: PutBody
    try {
      parsedBody = parsePutBody(body, max, Date.now())
    } catch (err) {
      return call.error(err)
    }
    call.applyLater(() =>
      call.ctx.data
        .put(call.account!, info, key, parsedBody.value, {
          ttl: parsedBody.ttl,
          expiresAt: parsedBody.expiresAt,
          ifMatch,
          ifNoneMatch,
        })
        .then(
          (r) => {
            const v = String(r.version)
            call.send(
              r.created ? 201 : 200,
              `{"created":${r.created},"version":"${v}"}`,
              `\r\nETag: "${v}"`,
            )
          },
          (err) => call.error(err),
        ),
    )
  })
}

export function deleteEntry(call: Call, req: HttpRequest, parsed: Parsed): void {
  const ns = parsed.ns
  if (!canUse(call, ns, true)) return
  const key = keyOf(call, parsed)
  if (key === undefined) return
  const ifMatch = parseTags(req.getHeader('if-match'))
  const info = namespaceOf(call, ns)
  if (info === undefined) return
  call.applyLater(() =>
    call.ctx.data.delete(info, key, ifMatch).then(
      (deleted) => {
        if (!deleted) return call.fail('key_not_found', 'There is no such key in this namespace.')
        call.send(200, '{"deleted":true}')
      },
      (err) => call.error(err),
    ),
  )
}
