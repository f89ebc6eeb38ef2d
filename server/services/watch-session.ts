// One watch of a namespace, whatever carries it (Server-Sent Events in watch.ts, a WebSocket
// in watch-ws.ts). It subscribes to the store's change feed first and reads history second,
// so nothing falls between the two; every change is then passed on once, in version order,
// by remembering the last version passed (a change the history and the live feed both hold
// goes once). A consumer that cannot keep up is closed with too_slow and resumes with since.
// A watch lasts only as long as what let it open: its API key (revoked or rotated, the stream
// ends within a second or two) and its namespace (dropped, it ends).
import type { Account, ApiKey } from './accounts.js'
import type { Services } from './index.js'
import type { Watches } from './watches.js'
import { ERRORS, type ErrorCode, type STREAM_CODES } from '../wire/errors.js'
import { isGone } from './store-errors.js'
import type { Change } from '../store/types.js'
import { expirySeconds } from '../wire/expiry.js'

/** What carries a watch's events to its client. */
export interface WatchSink {
  /** Adds one event to what flush sends. */
  event(type: 'put' | 'delete' | 'progress', data: string, version: number): void
  /**
   * Adds an event for each of `changes`, every one passed on: a group of live changes that a
   * watch of the whole namespace takes whole. Every watcher of the namespace is handed the
   * same array, so what this sends can be made once for all of them.
   */
  whole(changes: Change[]): void
  /**
   * Sends the events added since the last flush, together (a group of writes reaches each
   * watcher in one write, not one per change); false when the client is too far behind.
   */
  flush(): boolean
  /** Sends an error event and ends the stream. */
  fail(code: string, message: string): void
  /** Ends the stream quietly (the server is stopping, the client left). */
  end(): void
  /** Resolves once the client has taken what was sent (at once when nothing waits). */
  drained(): Promise<void>
}

/** Why a watch could not start: the error its client is answered with. */
export interface Refusal {
  code: ErrorCode
  message: string
}

/** History is read and sent this many changes at a time. */
const PAGE = 1000
/** A progress event after this long without any event. */
const PROGRESS_MS = 15_000
/** Changes passed over for a prefix between two progress marks: a tenth of the history. */
const PASSED_OVER = 1000
/** Live changes held while history is still being sent, past which the watch is too slow. */
const MAX_QUEUED = 100_000
/**
 * History goes out this many bytes of events at a time, each slice once the client has taken
 * the one before: a resume may owe the client far more than MAX_UNSENT, and that is not the
 * client being slow.
 */
const SLICE_BYTES = 256 * 1024
/** A client that takes no slice of history for this long is too slow. */
const DRAIN_MS = 30_000

/**
 * `make`, remembered for each change or group of changes it is given: the feeds hand every
 * watcher of a namespace the same Change objects and the same arrays of them, so what is made
 * of one (its event data, a group's events) is made once however many watchers take it.
 */
export function madeOnce<K extends object, V>(make: (k: K) => V): (k: K) => V {
  const made = new WeakMap<K, V>()
  return (k) => {
    let v = made.get(k)
    if (v === undefined) {
      v = make(k)
      made.set(k, v)
    }
    return v
  }
}

/** Each change's event data. */
export const dataOf = madeOnce(changeData)

/**
 * What a group of changes passed on whole counts (the bytes of its events' data), and whether
 * its versions rise from change to change.
 */
const groupOf = madeOnce((changes: Change[]) => {
  let bytes = 0
  let rising = true
  for (let i = 0; i < changes.length; i++) {
    bytes += dataOf(changes[i]!).length
    if (i > 0 && changes[i]!.version <= changes[i - 1]!.version) rising = false
  }
  return { bytes, rising }
})

/** A change as an event's JSON data. */
export function changeData(c: Change): string {
  const head = `{"key":${JSON.stringify(c.key)},"version":"${c.version}"`
  if (c.type === 'delete') return `${head}}`
  let s = `${head},"value":${c.value!.toString('utf8')}`
  if (c.expiresAt !== undefined) s += `,"expiresAt":${expirySeconds(c.expiresAt)}`
  if (c.metadata !== undefined) s += `,"metadata":${c.metadata.toString('utf8')}`
  return `${s}}`
}

/** What a watch uses: the services on storage and the watches open on this front end. */
export type WatchContext = Pick<Services, 'accounts' | 'store' | 'usage'> & { watches: Watches }

/** A watch's `allowed` for an API key: it still authenticates, as the same account's. */
export function keyWorks(ctx: WatchContext, secret: string, account: Account) {
  return (): boolean | Promise<boolean> => {
    const same = (k: ApiKey | undefined) => k !== undefined && k.account.id === account.id
    const k = ctx.accounts.authenticate(secret)
    return k instanceof Promise ? k.then(same) : same(k)
  }
}

export class WatchSession {
  /** The last version passed on (or passed over, for keys outside the prefix). */
  private last = 0
  /** The last version the client was told: an event's, or a progress mark's. */
  private told = 0
  /** Changes sent as events so far (progress marks not included): see add(). */
  private changesAdded = 0
  private queued: Change[] | null = []
  private backlog: Change[] = []
  private unsubscribe: (() => void) | null = null
  private untrack: (() => void) | null = null
  private timer: NodeJS.Timeout | null = null
  private lastSent = Date.now()
  private closed = false
  private released = false
  /** Why the watch ended, when it ended with an error (prepare answers it). */
  private failure: Refusal | undefined
  /** Wakes a wait for the client to drain (the watch stopped meanwhile). */
  private wake: (() => void) | null = null

  constructor(
    private ctx: WatchContext,
    private account: Account,
    /** The store's name for the namespace. */
    private ns: string,
    private prefix: string,
    private sink: WatchSink,
    /**
     * Whether what opened the watch (an API key, a dashboard session) still works: asked
     * every second, and the watch ends with unauthorized when it no longer does.
     */
    private allowed: () => boolean | Promise<boolean>,
  ) {
    this.untrack = ctx.watches.track(ns, (gone) => {
      if (gone) this.fail('namespace_not_found', 'The namespace was deleted.')
      else this.stop(true)
    })
  }

  /**
   * Subscribes and reads the first page of history. true, or why the watch cannot start (the
   * caller answers with it, and nothing was sent): history_expired when history no longer
   * reaches back to `since`, or it is past the namespace's latest version; or what ended the
   * watch while its history was read (its namespace deleted, the server stopping).
   */
  async prepare(since: number | undefined): Promise<true | Refusal> {
    const feed = this.ctx.store.feed
    this.unsubscribe = feed.subscribe(
      this.ns,
      (changes) => this.live(changes),
      () =>
        this.fail(
          'history_expired',
          'A failover lost changes this watch had sent, and their versions were taken again; list again, then watch.',
        ),
    )
    try {
      if (since === undefined) {
        this.last = await feed.version(this.ns)
        return this.closed ? this.ended() : true
      }
      // A version the namespace has not reached: the namespace was deleted and made again
      // since the client saw it (versions start over), or the number came from elsewhere.
      // Waiting for it would pass over every change until then.
      const current = await feed.version(this.ns)
      if (this.closed) return this.ended()
      if (since > current) {
        this.stop(false)
        return {
          code: 'history_expired',
          message: `since is past the namespace's latest version, ${current} (was it deleted and made again?); list again, then watch from the list's version.`,
        }
      }
      this.last = since
      const page = await feed.read(this.ns, since, PAGE)
      // Ended meanwhile: a namespace deleted (and perhaps made again) while its history was
      // read must not open a stream, whose client would resume into the new namespace.
      if (this.closed) return this.ended()
      if (page === 'expired') {
        this.stop(false)
        return { code: 'history_expired', message: ERRORS.history_expired.message }
      }
      this.backlog = page
      return true
    } catch (err) {
      this.stop(false)
      throw err
    }
  }

  /** Sends the opening progress event, the history, then live changes until stopped. */
  async run(): Promise<void> {
    if (this.closed) return
    this.told = this.last
    // Progress and error events are not counted: an idle watch costs only its opening request.
    this.send('progress', `{"version":"${this.last}"}`, this.last)
    await this.catchUp()
    if (this.closed || this.timer !== null) return
    this.timer = setInterval(() => this.tick(), 1000)
    this.timer.unref()
  }

  /**
   * Sends the backlog from history, then what arrived live meanwhile, paced, until caught
   * up; from then on each group of live changes is one flush (live).
   */
  private async catchUp(): Promise<void> {
    const feed = this.ctx.store.feed
    while (!this.closed && this.backlog.length > 0) {
      if (!(await this.paced(this.backlog))) return
      const page = await feed.read(this.ns, this.last, PAGE).catch(() => 'expired' as const)
      if (this.closed) return
      if (page === 'expired') {
        this.sink.fail(
          'history_expired',
          'The history ran out while it was being sent; list again, then watch.',
        )
        return this.stop(false)
      }
      this.backlog = page
    }
    // What arrived live meanwhile goes out paced too, until it is caught up with; from then
    // on each group of changes is one flush (live). No await lies between the last check of
    // the queue and dropping it, so no change falls between the two.
    while (!this.closed && this.queued!.length > 0) {
      const queued = this.queued!
      this.queued = []
      if (!(await this.paced(queued))) return
    }
    if (this.closed) return
    this.queued = null
  }

  /**
   * Live changes that begin past the next version: the feed started after changes this
   * watch has not passed on (on Redis, a stream poller that could not start at once). They
   * wait while history fills the gap, so the watch misses nothing.
   */
  private async fill(changes: Change[]): Promise<void> {
    this.queued = [...changes]
    try {
      const page = await this.ctx.store.feed.read(this.ns, this.last, PAGE)
      if (this.closed) return
      if (page === 'expired') {
        this.sink.fail(
          'history_expired',
          'The history ran out while it was being sent; list again, then watch.',
        )
        return this.stop(false)
      }
      this.backlog = page
      await this.catchUp()
    } catch {
      if (this.closed) return
      this.sink.fail('unavailable', 'The storage did not answer; resume with since.')
      this.stop(false)
    }
  }

  /** Ends the watch: `quietly` ends the stream without an error event. */
  stop(quietly: boolean): void {
    if (this.closed) return
    this.closed = true
    this.wake?.()
    this.unsubscribe?.()
    this.untrack?.()
    if (this.timer) clearInterval(this.timer)
    this.release()
    if (quietly) this.sink.end()
  }

  /** Gives the account's watch back (also when the watch never started). */
  release(): void {
    if (this.released) return
    this.released = true
    this.ctx.watches.release(this.account.id)
  }

  private live(changes: Change[]): void {
    if (this.closed) return
    if (this.queued === null) return this.deliver(changes)
    this.queued.push(...changes)
    if (this.queued.length > MAX_QUEUED) this.tooSlow()
  }

  /**
   * Adds a change's event unless it was passed on already; the bytes added, or -1. A change
   * sent as an event (not a progress mark) also adds one to `changesAdded`: only those count
   * as watch events in usage.
   */
  private add(c: Change): number {
    if (c.version <= this.last) return -1
    this.last = c.version
    if (!c.key.startsWith(this.prefix)) {
      // Changes passed over for the prefix are told as a progress mark every PASSED_OVER of
      // them: a client resumes from the last version it was told, and one told nothing
      // while the namespace moved on would reach back past the history (410) after a restart.
      if (this.last - this.told < PASSED_OVER) return -1
      this.told = this.last
      const mark = `{"version":"${this.last}"}`
      this.sink.event('progress', mark, this.last)
      return mark.length
    }
    this.told = c.version
    const data = dataOf(c)
    this.sink.event(c.type, data, c.version)
    this.changesAdded++
    return data.length
  }

  private deliver(changes: Change[]): void {
    // Where the answer is at hand (a key on the embedded store: its revocation is exact), a
    // revoked key gets no change after the revocation; otherwise it comes a moment later.
    this.checkAllowed()
    if (this.closed || changes.length === 0) return
    if (changes[0]!.version > this.last + 1) return void this.fill(changes)
    // Caught up and watching every key: a group whose versions all rise past the last one
    // passed on goes whole, its events made once for all the watchers that take it so. With
    // 100 watchers of a busy namespace, making them once each was most of what delivery cost.
    // (A version repeated, as in a Redis feed written before every write took its own, goes
    // change by change: add() passes such a change on once.)
    const group = this.prefix === '' ? groupOf(changes) : undefined
    if (group?.rising && changes[0]!.version > this.last) {
      this.last = changes[changes.length - 1]!.version
      this.told = this.last
      this.sink.whole(changes)
      this.ctx.usage.watchEvents(this.account.id, changes.length, group.bytes, Date.now())
      this.flush()
      return
    }
    const before = this.changesAdded
    let bytes = 0
    let sent = false
    for (const c of changes) {
      if (this.closed) break
      const n = this.add(c)
      if (n < 0) continue
      sent = true
      bytes += n
    }
    if (!sent) return
    this.ctx.usage.watchEvents(this.account.id, this.changesAdded - before, bytes, Date.now())
    this.flush()
  }

  /**
   * Sends changes a slice at a time, each once the client has taken the one before; false
   * when the watch ended meanwhile (stopped, or too slow to take a slice).
   */
  private async paced(changes: Change[]): Promise<boolean> {
    let events = 0
    let bytes = 0
    let before = this.changesAdded
    for (let i = 0; i < changes.length; i++) {
      if (this.closed) return false
      const n = this.add(changes[i]!)
      if (n >= 0) {
        events++
        bytes += n
      }
      if (events > 0 && (bytes >= SLICE_BYTES || i === changes.length - 1)) {
        this.ctx.usage.watchEvents(this.account.id, this.changesAdded - before, bytes, Date.now())
        before = this.changesAdded
        this.lastSent = Date.now()
        this.sink.flush()
        events = 0
        bytes = 0
        if (!(await this.drained())) {
          this.tooSlow()
          return false
        }
      }
    }
    return !this.closed
  }

  /** Waits for the client to take what was sent: true when it did, false after DRAIN_MS. */
  private drained(): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      const finish = (ok: boolean) => {
        clearTimeout(timer)
        this.wake = null
        resolve(ok)
      }
      const timer = setTimeout(() => finish(false), DRAIN_MS)
      this.wake = () => finish(true)
      this.sink.drained().then(() => finish(true))
    })
  }

  private send(type: 'put' | 'delete' | 'progress', data: string, version: number): boolean {
    this.sink.event(type, data, version)
    return this.flush()
  }

  private flush(): boolean {
    this.lastSent = Date.now()
    if (this.sink.flush()) return true
    this.tooSlow()
    return false
  }

  private tooSlow(): void {
    this.fail('too_slow', 'This watch fell too far behind; resume it with since.')
  }

  /** Why a watch that ended before it started did. */
  private ended(): Refusal {
    return this.failure ?? { code: 'unavailable', message: ERRORS.unavailable.message }
  }

  /** Ends the watch with an error event. */
  private fail(code: ErrorCode | (typeof STREAM_CODES)[number], message: string): void {
    if (this.closed) return
    if (code !== 'too_slow') this.failure = { code, message }
    this.sink.fail(code, message)
    this.stop(false)
  }

  /** Ends the watch once what opened it no longer works (a key revoked, a session ended). */
  private checkAllowed(): void {
    const check = (ok: boolean) => {
      if (!ok) this.fail('unauthorized', 'What this watch was opened with no longer works.')
    }
    const ok = this.allowed()
    if (typeof ok === 'boolean') check(ok)
    else ok.then(check, () => {})
  }

  private tick(): void {
    if (this.closed) return
    this.checkAllowed()
    // A namespace dropped meanwhile ends the watch; otherwise, progress after a quiet spell.
    this.ctx.store.feed.version(this.ns).then(
      (v) => {
        if (this.closed) return
        // Versions only go up, but for a namespace deleted and made again elsewhere, and on
        // Redis for a failover that lost changes this watch had sent (docs/redis.md, "Change
        // feed"): either way what the watcher holds is no longer what the namespace holds.
        if (v < this.last)
          return this.fail(
            'history_expired',
            "The namespace's versions went back (it was deleted and made again, or a failover lost changes this watch had sent); list again, then watch.",
          )
        if (Date.now() - this.lastSent < PROGRESS_MS) return
        if (v > this.last && this.queued === null) return // a change is on its way
        this.told = this.last
        this.send('progress', `{"version":"${this.last}"}`, this.last)
      },
      (err) => {
        if (isGone(err)) this.fail('namespace_not_found', 'The namespace was deleted.')
      },
    )
  }
}
