// GET /v1/{namespace}?prefix=&limit=&cursor=&include=&reverse=: keys (or entries, with
// `include`) in UTF-8 byte order, or descending with reverse=1, a page at a time, with the
// namespace's version when the page was read. With watch=1 the same path streams changes
// instead (watch.ts).
import type { HttpRequest } from '../http/uws.js'
import type { Plan } from '../services/plans.js'
import type { ListOptions, Listed, ListedEntry } from '../store/types.js'
import { decodeCursor, encodeCursor, walkOf } from '../wire/cursor.js'
import { expirySeconds } from '../wire/expiry.js'
import { parseQuery } from '../wire/query.js'
import { rangeFault } from '../wire/range.js'
import { countRange, exportRange } from './export.js'
import type { Call } from './call.js'
import { useRefusal, withNamespace } from './checks.js'
import type { Parsed } from './paths.js'
import { watchChanges } from './watch.js'
import { listingPoint, pointOf } from './history.js'

const LIMIT = /^[1-9][0-9]{0,3}$/
/** A page with values ends after the entry that takes it past this. */
const PAGE_BYTES = 4 * 1024 * 1024
const KEYS_HEAD = Buffer.from('{"keys":')

function entryText(e: ListedEntry): string {
  let s = `{"key":${JSON.stringify(e.key)},"version":"${e.version}"`
  if (e.expiresAt !== undefined) s += `,"expiresAt":${expirySeconds(e.expiresAt)}`
  if (e.value !== undefined) s += `,"value":${e.value.toString('utf8')}`
  if (e.metadata !== undefined)
    s += `,"metadata":${e.metadata === null ? 'null' : e.metadata.toString('utf8')}`
  return `${s}}`
}

/** `include`'s value: '' (keys), or the parts asked for; undefined when it names others. */
function includeOf(text: string | null): string | undefined {
  if (text === null || text === '') return ''
  const parts = new Set(text.split(','))
  for (const p of parts) if (p !== 'values' && p !== 'metadata') return undefined
  return (parts.has('values') ? 'v' : '') + (parts.has('metadata') ? 'm' : '')
}

export function listKeys(call: Call, req: HttpRequest, parsed: Parsed, plan: Plan): void {
  const ns = parsed.ns
  const refused = useRefusal(call.key!, ns, false)
  if (refused !== undefined) return call.refuse(refused)
  const q = parseQuery(req.getQuery() ?? '')
  if (!(q instanceof URLSearchParams))
    return call.fail(q.name === 'cursor' ? 'invalid_cursor' : 'invalid_request', q.message)
  if (q.get('watch') === '1') return watchChanges(call, req, parsed, plan, q)
  const startText = q.get('start')
  const endText = q.get('end')
  if (q.get('count') === '1' || q.get('export') === '1') {
    const range = { prefix: q.get('prefix') ?? '', start: startText ?? '', end: endText ?? '' }
    const fault = rangeFault(range)
    if (fault !== undefined) return call.fail('invalid_range', fault)
    if (q.get('export') === '1') {
      const atText = q.get('at')
      const point = atText === null ? undefined : pointOf(call, atText)
      if (atText !== null && point === undefined) return
      return exportRange(call, parsed, range, point)
    }
    return countRange(call, parsed, range)
  }

  let include = includeOf(q.get('include'))
  if (include === undefined)
    return call.fail('invalid_request', 'include is values, metadata or values,metadata.')
  const reverseText = q.get('reverse')
  if (reverseText !== null && reverseText !== '0' && reverseText !== '1')
    return call.fail('invalid_request', 'reverse is 1 (descending) or 0.')
  const limitText = q.get('limit')
  let limit = 1000
  if (limitText !== null) {
    limit = LIMIT.test(limitText) ? Number(limitText) : 0
    if (limit < 1 || limit > 1000) return call.fail('invalid_limit')
  }
  // The cursor carries its listing's shape: given alone it continues it; given with a shape
  // (include, direction) it must be the same one.
  const cursor = q.get('cursor')
  let reverse = reverseText === '1'
  const made = cursor === null ? undefined : decodeCursor(cursor)
  // A listing at a point (at=) carries the point's version in its cursor's mode: `@<version>`.
  const [madeShape = '', madeAt] = made?.mode.split('@') ?? []
  if (made !== undefined) {
    if (q.get('include') === null) include = madeShape.replace('r', '')
    if (reverseText === null) reverse = madeShape.includes('r')
  }
  const point = listingPoint(call, q.get('at'), cursor, madeAt)
  if (point === null) return
  const shape = `${include}${reverse ? 'r' : ''}${madeAt === undefined ? '' : `@${madeAt}`}`
  const walk = walkOf(q.get('prefix'), cursor, shape, startText, endText)
  if (walk === undefined) return call.fail('invalid_cursor')
  const { prefix, after, start, end } = walk
  const fault = rangeFault(walk)
  if (fault !== undefined) return call.fail('invalid_range', fault)
  const values = include.includes('v')
  const metadata = include.includes('m')
  if (limitText === null) limit = values ? 100 : 1000
  const o: ListOptions = {
    prefix,
    start,
    end,
    after,
    limit,
    reverse,
    include: values || metadata ? { values, metadata } : undefined,
    maxBytes: values ? PAGE_BYTES : undefined,
    json: !(values || metadata),
  }
  const answer = (page: Listed) => {
    let tail = ''
    const mode = point === undefined ? shape : `${shape.split('@')[0]}@${page.version}`
    if (page.next !== undefined)
      tail += `,"cursor":"${encodeCursor(page.next, prefix, mode, start, end)}"`
    tail += `,"version":"${page.version}"}`
    // Keys the store gave as JSON text go out as those bytes, with no string made for a key.
    if (page.json !== undefined)
      return call.send(200, Buffer.concat([KEYS_HEAD, page.json, Buffer.from(tail)]))
    const body =
      page.entries !== undefined
        ? `{"entries":[${page.entries.map(entryText).join(',')}]`
        : `{"keys":${JSON.stringify(page.keys)}`
    call.send(200, body + tail)
  }
  withNamespace(call, ns, (info) => {
    if (point !== undefined) {
      call.async()
      return (
        call.ctx.history
          // An empty bound is none (wire/range.ts); the engine's listAt takes only real ones.
          .listAt(
            info,
            { ...o, start: o.start || undefined, end: o.end || undefined, json: false },
            point,
          )
          .then(answer, (err) => call.error(err))
      )
    }
    // As a GET: a store that can answer at once is asked synchronously (no promise, no
    // registration for an abort).
    if (call.ctx.data.readsNow) {
      let page: Listed | undefined
      try {
        page = call.ctx.data.listNow(info, o)
      } catch (err) {
        return call.error(err)
      }
      if (page !== undefined) return answer(page)
    }
    call.async()
    call.ctx.data.list(info, o).then(answer, (err) => call.error(err))
  })
}
