// GET, PUT and DELETE /v1/{namespace}/{key}. A value is stored as its JSON text and read
// back as bytes, so the response body is `{"value":` + the stored text + `}` with no
// parsing or re-serialising on the way.
import type { NamespaceInfo } from '../services/accounts.js'
import type { HttpRequest } from '../http/uws.js'
import type { Plan } from '../services/plans.js'
import type { Entry } from '../store/types.js'
import { readRequestBody, typeRefusal } from './body.js'
import type { Call } from './call.js'
import { type Tags, matches, parseTags } from '../wire/conditions.js'
import { type PutBody, parsePutBody } from '../wire/json-body.js'
import { expirySeconds } from '../wire/expiry.js'
import { decodeKey } from '../wire/keys.js'
import { parseQuery } from '../wire/query.js'
import { bodyLimit } from '../wire/body-limits.js'
import type { Parsed } from './paths.js'
import { noSuchNamespace } from '../wire/errors.js'
import { getPast } from './history.js'
import { INVALID_KEY, useRefusal, withNamespace } from './checks.js'

const HEAD = Buffer.from('{"value":')
const TAIL = 0x7d // }
const META = Buffer.from(',"metadata":')
const NULL = Buffer.from('null')
const CLOSE = Buffer.from('}')

const etag = (version: number) => `"${version}"`

/** What a write to one key (PUT, PATCH) has checked before its body is read. */
export interface WriteTarget {
  ns: string
  key: string
  ifMatch: Tags | undefined
  ifNoneMatch: Tags | undefined
  /**
   * The namespace, when the account's snapshot had it: the write goes to it without a second
   * look once the body is in (a namespace dropped meanwhile is refused by the store, and
   * Data.put answers as withNamespace would). Undefined when the store had to be asked.
   */
  info: NamespaceInfo | undefined
}

/**
 * The one preamble of PUT and PATCH: a key that may write, a valid key, a JSON body, the
 * conditions, and a namespace not known to be missing. Undefined once it has answered.
 */
export function writeTarget(call: Call, req: HttpRequest, parsed: Parsed): WriteTarget | undefined {
  const ns = parsed.ns
  const key = decodeKey(parsed.rawKey)
  const refused =
    useRefusal(call.key!, ns, true) ??
    (key === undefined ? INVALID_KEY : undefined) ??
    typeRefusal(req)
  if (refused !== undefined) {
    call.refuse(refused)
    return undefined
  }
  const found = call.ctx.accounts.namespace(call.account!, ns)
  if (found === undefined) {
    call.fail('namespace_not_found', noSuchNamespace(ns))
    return undefined
  }
  return {
    ns,
    key: key!,
    ifMatch: parseTags(req.getHeader('if-match')),
    ifNoneMatch: parseTags(req.getHeader('if-none-match')),
    info: found instanceof Promise ? undefined : found,
  }
}

/**
 * Starts a GET's read while the rate limit is still being checked (handler.ts); getEntry
 * then answers from it. Only where the namespace and key are known at once; otherwise
 * getEntry reads as usual.
 */
export function prefetch(call: Call, parsed: Parsed): void {
  const info = call.account!.namespaces.get(parsed.ns)
  const key = decodeKey(parsed.rawKey)
  if (info === undefined || key === undefined || !call.key!.allows(parsed.ns)) return
  const read = call.ctx.data.get(info, key)
  read.catch(() => {})
  call.prefetched = read
}

export function getEntry(call: Call, req: HttpRequest, parsed: Parsed): void {
  const ns = parsed.ns
  const key = decodeKey(parsed.rawKey)
  const refused = useRefusal(call.key!, ns, false) ?? (key === undefined ? INVALID_KEY : undefined)
  if (refused !== undefined) return call.refuse(refused)
  const inm = req.getHeader('if-none-match')
  // ?metadata=1 asks for the metadata beside the value.
  const raw = req.getQuery()
  const q = raw === undefined || raw === '' ? undefined : parseQuery(raw)
  if (q !== undefined && !(q instanceof URLSearchParams))
    return call.fail('invalid_request', q.message)
  if (q !== undefined && (q.has('at') || q.get('history') === '1'))
    return getPast(call, key!, ns, q)
  const meta = q?.get('metadata') === '1'
  withNamespace(call, ns, (info) => readEntry(call, info, key!, inm, meta))
}

function readEntry(call: Call, info: NamespaceInfo, key: string, inm: string, meta: boolean): void {
  const data = call.ctx.data
  // An engine that can answer at once is asked synchronously: no promise, no registration
  // for an abort, the answer written while uWebSockets.js still has the socket corked.
  if (data.readsNow) {
    let got: Entry | undefined
    try {
      got = data.getNow(info, key)
    } catch (err) {
      return call.error(err)
    }
    return answerGet(call, got, inm, meta)
  }
  call.async()
  ;(call.prefetched ?? data.get(info, key)).then(
    (got) => answerGet(call, got, inm, meta),
    (err) => call.error(err),
  )
}

function answerGet(call: Call, got: Entry | undefined, inm: string, meta: boolean): void {
  if (got === undefined) return call.fail('key_not_found')
  const tag = etag(got.version)
  const lines =
    got.expiresAt === undefined
      ? `\r\nETag: ${tag}`
      : `\r\nETag: ${tag}\r\nX-Expires-At: ${expirySeconds(got.expiresAt)}`
  if (inm !== '') {
    const tags = parseTags(inm)
    if (tags !== undefined && matches(tags, got.version)) return call.empty(304, lines)
  }
  const v = got.value as Buffer
  const m = meta ? (got.metadata ?? NULL) : undefined
  // A HEAD is told the body's length; the body, a copy of the value, is not built.
  if (call.headOnly) {
    const bytes = HEAD.length + v.length + (m ? META.length + m.length : 0) + CLOSE.length
    return call.sendHead(200, bytes, lines)
  }
  if (m) return call.send(200, Buffer.concat([HEAD, v, META, m, CLOSE]), lines)
  const body = Buffer.allocUnsafe(v.length + 10)
  HEAD.copy(body, 0)
  v.copy(body, 9)
  body[v.length + 9] = TAIL
  call.send(200, body, lines)
}

export function putEntry(call: Call, req: HttpRequest, parsed: Parsed, plan: Plan): void {
  const target = writeTarget(call, req, parsed)
  if (target === undefined) return
  const { ns, key, ifMatch, ifNoneMatch, info: known } = target
  const max = plan.maxValueBytes
  readRequestBody(call, req, bodyLimit(plan), (body) => {
    let parsedBody: PutBody
    try {
      parsedBody = parsePutBody(body, max, call.ctx.clock.now())
    } catch (err) {
      return call.error(err)
    }
    const write = (info: NamespaceInfo) =>
      call.applyLater(() =>
        call.ctx.data
          .put(
            call.account!,
            info,
            key,
            parsedBody.value,
            {
              ttl: parsedBody.ttl,
              expiresAt: parsedBody.expiresAt,
              ifMatch,
              ifNoneMatch,
              metadata: parsedBody.metadata,
            },
            plan,
          )
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
    if (known !== undefined) write(known)
    else withNamespace(call, ns, write)
  })
}

export function deleteEntry(call: Call, req: HttpRequest, parsed: Parsed): void {
  const ns = parsed.ns
  const key = decodeKey(parsed.rawKey)
  const refused = useRefusal(call.key!, ns, true) ?? (key === undefined ? INVALID_KEY : undefined)
  if (refused !== undefined) return call.refuse(refused)
  const ifMatch = parseTags(req.getHeader('if-match'))
  const ifNoneMatch = parseTags(req.getHeader('if-none-match'))
  withNamespace(call, ns, (info) =>
    call.applyLater(() =>
      call.ctx.data.delete(info, key!, ifMatch, ifNoneMatch).then(
        (deleted) => {
          if (!deleted) return call.fail('key_not_found')
          call.send(200, '{"deleted":true}')
        },
        (err) => call.error(err),
      ),
    ),
  )
}
