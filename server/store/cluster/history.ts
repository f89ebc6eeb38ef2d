// History windows and reads at a point on Redis Cluster (docs/redis.md, "History"): the
// windows live in each namespace's meta hash, so every front end and every write script sees
// them; the write scripts keep what they supersede (history-scripts.ts), and these reads
// resolve a point and read the state kept for it.
import type { Commands } from './commands.js'
import { meta, sweepHistory } from './entries.js'
import type {
  Entry,
  EntryHistory,
  EntryVersion,
  HistoryPoint,
  Listed,
  ListedEntry,
} from '../types.js'

const num = (b: Buffer | string | number) => Number(String(b))

/** The point as the read scripts take it: a kind and a number, or why it names no state. */
function pointArgs(point: HistoryPoint): [string, string] {
  const bad = (why: string) => Object.assign(new Error(why), { code: 'INVALID_POINT' })
  if (point === null || typeof point !== 'object') throw bad('a point is { version } or { at }')
  if ('version' in point) {
    const v = point.version
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0)
      throw bad('a version is a whole number, 0 or more')
    return ['v', String(v)]
  }
  const at = (point as { at: unknown }).at
  if (typeof at !== 'number' || !Number.isFinite(at))
    throw bad('a time is milliseconds since the Unix epoch')
  return ['t', String(Math.floor(at))]
}

/** The scripts' refusals of a point, worded as the engine words them. */
function pointError(err: unknown): unknown {
  const e = err as { code?: string; message?: string }
  if (e?.code !== 'HISTORY_EXPIRED' && e?.code !== 'INVALID_POINT') return err
  let why = String(e.message).replace(/^(ERR )?(HISTORY_EXPIRED|INVALID_POINT) ?/, '')
  const at = /^at (\d+)$/.exec(why)
  if (at)
    why = `the point is older than the history, which begins at ${new Date(Number(at[1])).toISOString()}`
  return Object.assign(new Error(why), { code: e.code })
}

function entryOf(s: (Buffer | null | false)[]): Entry {
  const e: Entry = { value: s[2] as Buffer, version: num(s[0] as Buffer) }
  if (s[1]) e.expiresAt = num(s[1] as Buffer)
  if (s[3]) e.metadata = s[3] as Buffer
  return e
}

export class ClusterHistory implements EntryHistory {
  constructor(private cmd: Commands) {}

  async setWindow(ns: string, window: { seconds: number; bytes: number }): Promise<void> {
    const m = meta(ns)
    const old = String(
      await this.cmd.write('cairnHistSet', [
        m,
        Math.max(0, Math.floor(window.seconds)),
        Math.max(0, Math.floor(window.bytes)),
      ]),
    )
    if (old !== '') await sweepHistory(this.cmd, m, old)
  }

  async getAt(ns: string, key: string, point: HistoryPoint): Promise<Entry | undefined> {
    const r: any[] = await this.cmd
      .read('cairnHistGet', [meta(ns), ...pointArgs(point), key], true)
      .catch((err) => Promise.reject(pointError(err)))
    return r[1] ? entryOf(r[1]) : undefined
  }

  async listAt(
    ns: string,
    o: Parameters<EntryHistory['listAt']>[1],
    point: HistoryPoint,
  ): Promise<Listed> {
    const inc = o.include
    const r: any[] = await this.cmd
      .read(
        'cairnHistList',
        [
          meta(ns),
          ...pointArgs(point),
          o.prefix ?? '',
          o.start ?? '',
          o.end ?? '',
          o.after ?? '',
          o.limit ?? 1000,
          o.reverse ? '1' : '',
          inc ? 'e' : '',
        ],
        inc !== undefined,
      )
      .catch((err) => Promise.reject(pointError(err)))
    const out: Listed = { keys: [], version: num(r[0]) }
    if (inc) {
      out.entries = []
      for (let i = 3; i < r.length; i++) {
        const [k, n, x, v, md] = r[i] as (Buffer | null | false)[]
        const e: ListedEntry = { key: (k as Buffer).toString(), version: num(n as Buffer) }
        if (x) e.expiresAt = num(x as Buffer)
        if (inc.values) e.value = v as Buffer
        if (inc.metadata) e.metadata = md ? (md as Buffer) : null
        out.keys.push(e.key)
        out.entries.push(e)
      }
    } else out.keys = r.slice(3).map(String)
    if (r[2]) out.next = String(r[2])
    else if (r[1] === 1 && out.keys.length > 0) out.next = out.keys[out.keys.length - 1]
    return out
  }

  async versions(
    ns: string,
    key: string,
    opts?: { limit?: number; before?: number },
  ): Promise<EntryVersion[]> {
    const limit = opts?.limit ?? 100
    if (!Number.isInteger(limit) || limit < 1)
      throw Object.assign(new Error('limit must be a positive integer'), {
        code: 'INVALID_ARGUMENT',
      })
    const r: any[] = await this.cmd.read(
      'cairnHistVersions',
      [meta(ns), key, limit, opts?.before === undefined ? '' : String(opts.before)],
      true,
    )
    const fromAt = num(r[1])
    return r.slice(2).map((row: (Buffer | null | false)[]) => {
      const v: EntryVersion = {
        version: num(row[1] as Buffer),
        at: row[2] ? num(row[2] as Buffer) : fromAt,
      }
      if (String(row[0]) === 'd') {
        v.deleted = true
        return v
      }
      v.value = row[4] as Buffer
      if (row[3]) v.expiresAt = num(row[3] as Buffer)
      if (row[5]) v.metadata = row[5] as Buffer
      return v
    })
  }

  async window(ns: string): Promise<{ from: { version: number; at: number }; bytes: number }> {
    const [version, at, bytes] = await this.cmd.read('cairnHistWindow', [meta(ns)])
    return { from: { version: num(version), at: num(at) }, bytes: num(bytes) }
  }
}
