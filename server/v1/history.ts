// Reads of the past and restores (the contract's "History and restore"):
// GET /v1/{ns}/{key}?at=<point>, GET /v1/{ns}/{key}?history=1 and POST /v1/{ns}?restore=1.
import type { HttpRequest } from '../http/uws.js'
import type { Plan } from '../services/plans.js'
import { restore } from '../services/restore.js'
import { OP } from '../services/usage.js'
import type { Entry, EntryVersion, HistoryPoint } from '../store/types.js'
import { expirySeconds } from '../wire/expiry.js'
import { parseJsonObject } from '../wire/json-body.js'
import { POINT_HELP, parsePoint } from '../wire/point.js'
import { ApiError } from '../wire/errors.js'
import { type KeyRange, rangeFault } from '../wire/range.js'
import { readRequestBody, typeRefusal } from './body.js'
import type { Call } from './call.js'
import { missingRefusal, useRefusal, withNamespace } from './checks.js'
import type { Parsed } from './paths.js'

const LIMIT = /^[1-9][0-9]{0,3}$/
const BODY_LIMIT = 16 * 1024
/** Keys a restore writes per request it counts as. */
const KEYS_PER_REQUEST = 1000

/** The query's point, or undefined after answering 400 invalid_point. */
export function pointOf(call: Call, text: string): HistoryPoint | undefined {
  const p = parsePoint(text)
  if (p === undefined) call.fail('invalid_point', POINT_HELP)
  return p
}

/** `?history=1` cursors: the version the next page is below. */
const encodeVersionCursor = (v: number) => Buffer.from(`h${v}`).toString('base64url')
function decodeVersionCursor(c: string): number | undefined {
  if (!/^[A-Za-z0-9_-]{1,24}$/.test(c)) return undefined
  const m = /^h([0-9]{1,16})$/.exec(Buffer.from(c, 'base64url').toString('latin1'))
  return m ? Number(m[1]) : undefined
}

/** GET /{ns}/{key} with `at` or `history=1` (entries.ts hands it over). */
export function getPast(call: Call, key: string, ns: string, q: URLSearchParams): void {
  if (q.get('history') === '1') return listVersions(call, ns, key, q)
  const point = pointOf(call, q.get('at')!)
  if (point === undefined) return
  const meta = q.get('metadata') === '1'
  withNamespace(call, ns, (info) => {
    call.async()
    call.ctx.history.getAt(info, key, point).then(
      (got) => answerAt(call, got, meta),
      (err) => call.error(err),
    )
  })
}

function answerAt(call: Call, got: Entry | undefined, meta: boolean): void {
  if (got === undefined) return call.fail('key_not_found', 'The key did not exist at that point.')
  let lines = `\r\nETag: "${got.version}"`
  if (got.expiresAt !== undefined) lines += `\r\nX-Expires-At: ${expirySeconds(got.expiresAt)}`
  let body = `{"value":${(got.value as Buffer).toString('utf8')}`
  if (meta) body += `,"metadata":${got.metadata?.toString('utf8') ?? 'null'}`
  call.send(200, `${body}}`, lines)
}

function versionText(v: EntryVersion): string {
  let s = `{"version":"${v.version}","at":"${new Date(v.at).toISOString()}"`
  if (v.deleted) s += ',"deleted":true'
  if (v.value !== undefined) s += `,"value":${v.value.toString('utf8')}`
  if (v.expiresAt !== undefined) s += `,"expiresAt":${expirySeconds(v.expiresAt)}`
  if (v.metadata !== undefined) s += `,"metadata":${v.metadata.toString('utf8')}`
  return `${s}}`
}

function listVersions(call: Call, ns: string, key: string, q: URLSearchParams): void {
  const limitText = q.get('limit')
  let limit = 100
  if (limitText !== null) {
    limit = LIMIT.test(limitText) ? Number(limitText) : 0
    if (limit < 1 || limit > 1000) return call.fail('invalid_limit')
  }
  const cursor = q.get('cursor')
  const before = cursor === null ? undefined : decodeVersionCursor(cursor)
  if (cursor !== null && before === undefined) return call.fail('invalid_cursor')
  withNamespace(call, ns, (info) => {
    call.async()
    // One more than the page, to know whether another follows.
    call.ctx.history.versions(info, key, { limit: limit + 1, before }).then(
      (got) => {
        const page = got.slice(0, limit)
        let body = `{"versions":[${page.map(versionText).join(',')}]`
        if (got.length > limit)
          body += `,"cursor":"${encodeVersionCursor(page[limit - 1]!.version)}"`
        call.send(200, `${body}}`)
      },
      (err) => call.error(err),
    )
  })
}

/** POST /{ns}?restore=1, body {"at", "prefix"?, "start"?, "end"?}. */
export function restoreNamespace(call: Call, req: HttpRequest, parsed: Parsed, _plan: Plan): void {
  const ns = parsed.ns
  call.op = OP.restore
  const refused = useRefusal(call.key!, ns, true) ?? typeRefusal(req) ?? missingRefusal(call, ns)
  if (refused !== undefined) return call.refuse(refused)
  readRequestBody(call, req, BODY_LIMIT, (body) => {
    let point: HistoryPoint | undefined
    const range: KeyRange = { prefix: '', start: '', end: '' }
    try {
      const o = parseJsonObject(body)
      if (typeof o.at !== 'string')
        throw new ApiError('invalid_point', `A restore names its point in "at". ${POINT_HELP}`)
      point = parsePoint(o.at)
      if (point === undefined) throw new ApiError('invalid_point', POINT_HELP)
      for (const name of ['prefix', 'start', 'end'] as const) {
        const v = o[name]
        if (v === undefined) continue
        if (typeof v !== 'string') throw new ApiError('invalid_request', `"${name}" is a string.`)
        range[name] = v
      }
      const fault = rangeFault(range)
      if (fault !== undefined) throw new ApiError('invalid_range', fault)
    } catch (err) {
      return call.error(err)
    }
    const at = point
    withNamespace(call, ns, (info) =>
      call.applyLater(() =>
        restore(call.ctx, call.account!, info, at, { ...range, prefix: range.prefix ?? '' }).then(
          (r) => {
            call.count = Math.max(1, Math.ceil(r.restored / KEYS_PER_REQUEST))
            call.send(200, `{"restored":${r.restored},"version":"${r.version}"}`)
          },
          (err) => call.error(err),
        ),
      ),
    )
  })
}

/** Whether a POST /{ns} asks for a restore (`restore=1`) rather than a transaction. */
export function restoreAsked(req: HttpRequest): boolean {
  const q = req.getQuery()
  return q !== undefined && /(?:^|&)restore=1(?:&|$)/.test(q)
}

/**
 * A listing's point: the one its cursor carries (`at`, if given too, must be that version
 * or a time), the one `at` names, or undefined for the present. null once it has answered.
 */
export function listingPoint(
  call: Call,
  atText: string | null,
  cursor: string | null,
  cursorAt: string | undefined,
): HistoryPoint | undefined | null {
  if (cursorAt !== undefined) {
    const version = Number(cursorAt)
    if (
      !/^[0-9]{1,16}$/.test(cursorAt) ||
      (atText !== null && /^[0-9]+$/.test(atText) && atText !== cursorAt)
    ) {
      call.fail('invalid_cursor')
      return null
    }
    return { version }
  }
  if (atText === null) return undefined
  // A cursor of a listing of the present cannot go on at a point.
  if (cursor !== null) {
    call.fail('invalid_cursor')
    return null
  }
  return pointOf(call, atText) ?? null
}
