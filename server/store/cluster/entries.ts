// Entries on Redis Cluster: one hash tag per namespace (`{n:<ns>}`), so a namespace's
// entries, its ordered index and its counters share a slot and every operation is one
// script on one master (entry-scripts.ts; docs/redis.md, "Entries").
import { randomUUID } from 'node:crypto'
import { LRUCache } from 'lru-cache'
import type { Commands } from './commands.js'
import type {
  Change,
  Entries,
  Entry,
  EntryStat,
  EntryWrite,
  ExportedEntry,
  KeyRangeOptions,
  RangeCounts,
  RangeSnapshot,
  ListedEntry,
  ListOptions,
  Listed,
  NamespaceCounts,
  Restored,
  Transacted,
  TxOp,
  TxResult,
  Written,
} from '../types.js'

export const meta = (ns: string) => `c:{n:${ns}}:m`
/** The namespace's change feed (a stream) in generation `g`. */
export const feedKey = (ns: string, g: string) => `c:{n:${ns}}:${g}:f`
const generations = (ns: string) => `c:{n:${ns}}:g`
/** Where generation `g`'s keys start: its entries, index and expiry set. */
const garbage = (ns: string, g: string) => `c:{n:${ns}}:${g}:`
/** An entry's fields: value, version, expiry, metadata (docs/redis.md, "Entries"). */
const FIELDS = ['v', 'n', 'x', 'm']

/** Deletes a history prefix no namespace reads any more (history-scripts.ts), a chunk per call. */
export async function sweepHistory(cmd: Commands, m: string, prefix: string): Promise<void> {
  while ((await cmd.write('cairnHistSweep', [m, prefix])) > 0) {}
}

/** A namespace name that cannot break out of its hash tag. */
function checkName(ns: string): void {
  if (ns === '' || /[{}]/.test(ns))
    throw Object.assign(new Error(`namespace name "${ns}" may not hold { or }`), {
      code: 'INVALID_ARGUMENT',
    })
}

function expiry(o: { ttlMs?: number; expiresAt?: number } | undefined, now: number): string {
  if (o?.expiresAt !== undefined) return String(Math.floor(o.expiresAt))
  if (o?.ttlMs !== undefined) return String(now + Math.floor(o.ttlMs))
  return ''
}

function toEntry(r: Buffer[] | null): Entry | undefined {
  if (!r) return undefined
  const e: Entry = { value: r[0]!, version: Number(r[1]!.toString()) }
  if (r[2]) e.expiresAt = Number(r[2].toString())
  if (r[3]) e.metadata = r[3]
  return e
}

const num = (b: Buffer | string | number) => Number(String(b))
const fail = (message: string, index?: number) =>
  Object.assign(new Error(message), { code: 'INVALID_ARGUMENT', index })

/** A feed stream entry ([id, [field, value, ...]]) as a Change. */
export function toChange([id, fields]: [Buffer | string, (Buffer | string)[]]): Change {
  const f: Record<string, Buffer> = {}
  for (let i = 0; i < fields.length; i += 2)
    f[String(fields[i])] = Buffer.isBuffer(fields[i + 1])
      ? (fields[i + 1] as Buffer)
      : Buffer.from(fields[i + 1] as string)
  const version = Number(String(id).slice(0, String(id).indexOf('-')))
  const key = f.k!.toString()
  if (f.t!.toString() === 'd') return { type: 'delete', key, version }
  const c: Change = { type: 'put', key, version, value: f.v! }
  if (f.x) c.expiresAt = Number(f.x.toString())
  if (f.m) c.metadata = f.m
  return c
}

/** Namespaces whose generation a front end remembers for its reads: the most recent. */
const GENERATIONS_MAX = 100_000
/** How long an export may read its snapshot; what writes keep for it goes then at the latest. */
const SNAPSHOT_LIFETIME_MS = 3_600_000

export class ClusterEntries implements Entries {
  /**
   * Each namespace's generation as this front end last read it, so a GET can read its entry
   * with two plain commands instead of a script (docs/redis.md, "Reading an entry").
   */
  private gens = new LRUCache<string, string>({ max: GENERATIONS_MAX })

  constructor(private cmd: Commands) {}

  async createNamespace(ns: string): Promise<boolean> {
    checkName(ns)
    return (await this.cmd.write('cairnCreate', [meta(ns), generations(ns)])) === 1
  }

  async dropNamespace(ns: string): Promise<boolean> {
    checkName(ns)
    const dropped = await this.cmd.write('cairnDrop', [meta(ns)])
    this.gens.delete(ns)
    if (dropped === null || dropped === undefined) return false
    const [g, hist] = dropped as [string, string]
    // The meta hash is gone, so every script now refuses the namespace; its entries (and its
    // history) are garbage of a generation no later namespace of the name can reach,
    // unlinked in chunks.
    const base = garbage(ns, String(g))
    while ((await this.cmd.read('cairnSweep', [`${base}i`, `${base}x`, `${base}e:`])) > 0) {}
    if (hist !== '') await sweepHistory(this.cmd, meta(ns), String(hist))
    return true
  }

  async namespaceCounts(ns: string): Promise<NamespaceCounts | undefined> {
    try {
      const now = Date.now()
      let [keys, bytes, due] = await this.cmd.read('cairnCounts', [meta(ns), now])
      // Entries past their expiry still count: reclaiming them is a write (each is a change
      // in the feed), so it goes the write path, and only when there are some.
      if (due > 0) [keys, bytes] = await this.cmd.write('cairnExpire', [meta(ns), now])
      return { keys: Number(keys), bytes: Number(bytes) }
    } catch (err) {
      if ((err as { code?: string }).code === 'NAMESPACE_NOT_FOUND') return undefined
      throw err
    }
  }

  /**
   * An entry, by HMGET of the entry in the namespace's remembered generation and HGET of the
   * generation after it: the answer stands when the generation is still the one remembered.
   * The first read of a namespace, and one that finds the generation changed (dropped, or
   * made again), asks the GET script instead, which also says when the namespace is gone.
   */
  get(ns: string, key: string): Promise<Entry | undefined> {
    const m = meta(ns)
    const now = Date.now()
    const g = this.gens.get(ns)
    if (g === undefined) {
      this.cmd.readCommand(m, ['HGET', m, 'g']).then(
        (v) => typeof v === 'string' && this.gens.set(ns, v),
        () => {},
      )
      return this.cmd.read('cairnGet', [m, key, now], true).then(toEntry)
    }
    // The entry first, then the generation, one check for every GET of the namespace in this
    // turn (readAfter sends it after all of them): should the lane lose its connection between
    // the answers, only those not yet answered are sent again, in order, and a generation
    // still current after an entry was read was current when it was read (generations are
    // never reused).
    const entry = this.cmd.readCommand(m, ['HMGET', `${garbage(ns, g)}e:${key}`, ...FIELDS], true)
    // A check that failed fails no GET by itself: each asks the script instead.
    const gen = this.cmd.readAfter(m, ['HGET', m, 'g']).catch(() => null)
    return Promise.all([gen, entry]).then(([current, r]: [string | null, (Buffer | null)[]]) => {
      if (current !== g) {
        this.gens.delete(ns)
        return this.get(ns, key)
      }
      if (r[0] === null || (r[2] !== null && Number(r[2]!.toString()) <= now)) return undefined
      return toEntry(r as Buffer[])
    })
  }

  async stat(ns: string, key: string): Promise<EntryStat | undefined> {
    const r = await this.cmd.read('cairnStat', [meta(ns), key, Date.now()])
    if (!r) return undefined
    const s: EntryStat = { version: Number(r[0]), bytes: Number(r[1]) }
    if (r[2]) s.expiresAt = Number(r[2])
    return s
  }

  async put(ns: string, key: string, value: Buffer, o?: EntryWrite): Promise<Written> {
    const now = Date.now()
    const want = o?.ifVersion === undefined ? '' : o.ifVersion === null ? '-' : String(o.ifVersion)
    const [version, created] = await this.cmd.write('cairnPut', [
      meta(ns),
      key,
      value,
      now,
      expiry(o, now),
      want,
      o?.metadata ?? '',
    ])
    return { version: Number(version), created: created === 1 }
  }

  async delete(ns: string, key: string, o?: { ifVersion?: number }): Promise<boolean> {
    const want = o?.ifVersion === undefined ? '' : String(o.ifVersion)
    return (await this.cmd.write('cairnDelete', [meta(ns), key, Date.now(), want])) === 1
  }

  async list(ns: string, o: ListOptions = {}): Promise<Listed> {
    const limit = o.limit ?? 1000
    const inc = o.include
    const mode = inc ? `e${inc.values ? 'v' : ''}${inc.metadata ? 'm' : ''}` : ''
    const r: any[] = await this.cmd.read(
      'cairnList',
      [
        meta(ns),
        o.prefix ?? '',
        o.after ?? '',
        limit,
        o.reverse ? '1' : '',
        Date.now(),
        mode,
        o.maxBytes === undefined ? '' : Math.floor(o.maxBytes),
        o.start ?? '',
        o.end ?? '',
      ],
      inc !== undefined,
    )
    const out: Listed = { keys: [], version: num(r[0]) }
    if (inc) {
      out.entries = []
      for (let i = 2; i < r.length; i++) {
        const [k, n, x, v, m] = r[i] as (Buffer | null)[]
        const e: ListedEntry = { key: k!.toString(), version: num(n!) }
        if (x) e.expiresAt = num(x)
        if (inc.values) e.value = v!
        if (inc.metadata) e.metadata = m ?? null
        out.keys.push(e.key)
        out.entries.push(e)
      }
    } else out.keys = r.slice(2)
    if (r[1] === 1 && out.keys.length > 0) out.next = out.keys[out.keys.length - 1]
    return out
  }

  async countRange(ns: string, r: KeyRangeOptions): Promise<RangeCounts> {
    const [count, bytes, version] = await this.cmd.read('cairnCountRange', [
      meta(ns),
      r.prefix ?? '',
      r.start ?? '',
      r.end ?? '',
      Date.now(),
    ])
    return { count: Number(count), bytes: Number(bytes), version: Number(version) }
  }

  /** An export's read: a snapshot kept by the namespace's own scripts (docs/redis.md, "Exports"). */
  async snapshot(ns: string, r: KeyRangeOptions): Promise<RangeSnapshot> {
    const id = randomUUID()
    const m = meta(ns)
    const version = Number(
      await this.cmd.write('cairnSnapOpen', [m, id, Date.now(), SNAPSHOT_LIFETIME_MS]),
    )
    const cmd = this.cmd
    let closed = false
    let ended = false
    return {
      version,
      async next(limit: number): Promise<ExportedEntry[]> {
        for (;;) {
          if (closed || ended) return []
          const r2: any[] = await cmd
            .write(
              'cairnSnapRead',
              [m, id, r.prefix ?? '', r.start ?? '', r.end ?? '', limit, Date.now()],
              true,
            )
            .catch((err: { message?: string }) => {
              if (String(err?.message).includes('SNAPSHOT_GONE'))
                throw Object.assign(
                  new Error('the export ran past its lifetime (an hour); export again'),
                  { code: 'IO_ERROR' },
                )
              throw err
            })
          ended = num(r2[0]) === 1
          const out: ExportedEntry[] = []
          for (let i = 1; i < r2.length; i++) {
            const [k, v, n, x, md] = r2[i] as (Buffer | null)[]
            const e: ExportedEntry = { key: k!.toString(), value: v!, version: num(n!) }
            if (x) e.expiresAt = num(x)
            if (md && md.length > 0) e.metadata = md
            out.push(e)
          }
          if (out.length > 0 || ended) return out
        }
      },
      close() {
        if (closed) return
        closed = true
        const drop = (): Promise<void> =>
          cmd
            .write('cairnSnapClose', [m, id])
            .then((left: number) => (left > 0 ? drop() : undefined))
        drop().catch(() => {})
      },
    }
  }

  /** Writes entries with the versions they had elsewhere (cairn migrate). */
  async restore(ns: string, rows: Restored[], version: number): Promise<void> {
    const args: (string | Buffer | number)[] = [meta(ns), Date.now(), version]
    for (const r of rows)
      args.push(
        r.key,
        r.value,
        r.version,
        r.expiresAt === undefined ? '' : String(r.expiresAt),
        r.metadata ?? '',
      )
    await this.cmd.write('cairnImport', args)
  }

  async transact(ns: string, ops: TxOp[]): Promise<Transacted> {
    const now = Date.now()
    // One limit for the whole script: the smallest any increment carries ('' for none).
    let most = Number.POSITIVE_INFINITY
    for (const op of ops)
      if ((op.op === 'increment' || op.op === 'patch') && op.maxBytes !== undefined)
        most = Math.min(most, op.maxBytes)
    const args: (string | Buffer | number)[] = [meta(ns), now, Number.isFinite(most) ? most : '']
    const written = new Set<string>()
    for (const [i, op] of ops.entries()) {
      if (op.op !== 'check' && op.op !== 'get') {
        if (written.has(op.key)) throw fail(`op ${i} writes ${op.key} a second time`, i)
        written.add(op.key)
      }
      const want = (v: number | null | undefined) =>
        v === undefined ? '' : v === null ? '-' : String(v)
      switch (op.op) {
        case 'check':
          args.push('c', op.key, '', '', '', '', want(op.version))
          break
        case 'get':
          args.push('g', op.key, op.metadata ? '1' : '', '', '', '', '')
          break
        case 'put':
          args.push(
            'p',
            op.key,
            op.value,
            expiry(op, now),
            op.metadata ?? '',
            '',
            want(op.ifVersion),
          )
          break
        case 'delete':
          args.push('d', op.key, '', '', '', '', want(op.ifVersion))
          break
        case 'increment':
          args.push('i', op.key, op.by.toString(), '', '', '', '')
          break
        case 'patch':
          args.push(
            'a',
            op.key,
            op.by === undefined ? '' : op.by.toString(),
            op.persist ? 'p' : expiry(op, now),
            op.metadata ?? '',
            op.metadata === undefined ? '' : op.metadata === null ? 'r' : 's',
            want(op.ifVersion),
          )
          break
        default:
          throw fail(`op ${i} is not a known op`, i)
      }
    }
    const r: any[] = await this.cmd.write('cairnTransact', args, true)
    const results = r.slice(1).map((x: any[], i): TxResult => {
      switch (String(x[0])) {
        case 'c':
          return {}
        case 'g': {
          if (x.length === 1) return { found: false }
          const g: TxResult = { found: true, value: x[1], version: num(x[2]) }
          if (x[3]) g.expiresAt = num(x[3])
          if ((ops[i] as { metadata?: boolean }).metadata) g.metadata = x[4] ?? null
          return g
        }
        case 'p':
          return { created: x[2] === 1, version: num(x[1]) }
        case 'd':
          return { deleted: x[1] === 1 }
        case 'i':
          return { value: BigInt(String(x[1])), version: num(x[2]) }
        default: {
          const a: { value?: bigint; version: number; created: boolean } = {
            version: num(x[1]),
            created: x[3] === 1,
          }
          if (x[2]) a.value = BigInt(String(x[2]))
          return a
        }
      }
    })
    return { version: num(r[0]), results }
  }

  /** The namespace's generation and current version. */
  async feedVersion(ns: string, durable = false): Promise<{ g: string; version: number }> {
    const args = [meta(ns)]
    const [g, v] = durable
      ? await this.cmd.write('cairnFeedVersion', args)
      : await this.cmd.read('cairnFeedVersion', args)
    return { g: String(g), version: num(v) }
  }

  async feedRead(ns: string, since: number, limit: number): Promise<Change[] | 'expired'> {
    const r: any[] = await this.cmd.read(
      'cairnFeedRead',
      [meta(ns), Math.max(0, Math.floor(since)), Math.max(1, Math.floor(limit))],
      true,
    )
    if (r[2] === 1) return 'expired'
    return r.slice(3).map(toChange)
  }
}
