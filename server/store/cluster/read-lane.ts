// Reads sent straight to the slot's master, without the client library's per-command work.
// ioredis spends about 9 us of CPU on a command (its Command objects, pipeline, slot checks
// and promises), against under 4 us for the same EVALSHA written as RESP on a socket and its
// answer parsed with the parser ioredis itself uses; on a GET that was a third of the front
// end's work. So the scripts that only read go to the master of their slot on a connection of
// the lane's own, each turn's in one write, their answers matched in order.
//
// ioredis stays the authority on the cluster. The lane takes the master from ioredis's slot
// table, and sends a call back to ioredis (which follows MOVED and ASK, reloads scripts,
// waits out a failover) whenever the answer is about the cluster rather than the data, the
// connection is lost or refused, or the master has not answered for CALL_TIMEOUT_MS. Only
// reads take the lane, so a call sent twice that way changes nothing. Writes never take it:
// their durability (WAIT) and their group commit stay as commands.ts makes them.
import net from 'node:net'
import tls from 'node:tls'
import Parser from 'redis-parser'
import type { ReadLaneStats } from '../types.js'
import type { RedisUrl } from './connect.js'
import { unavailable } from './errors.js'

/** A read for the lane: one EVALSHA (or a read command, `words`), and where its answer goes. */
export interface LaneCall {
  readonly sha: string
  readonly keys: number
  readonly args: readonly (string | Buffer | number)[]
  /** A plain read command to send instead of the script (HGET, HMGET). */
  readonly words?: readonly (string | Buffer | number)[]
  /** Answer bulk strings as Buffers (else as strings, as ioredis's evalsha does). */
  readonly buffers: boolean
  resolve(value: unknown): void
  reject(err: Error): void
}

/** A master that has not answered for this long is given up on: its calls go to ioredis. */
export const CALL_TIMEOUT_MS = 2000
/** After a connection to a master fails, the lane leaves it to ioredis this long. */
const REST_MS = 1000
/** A lane connection with nothing asked of it for this long is closed. */
const IDLE_MS = 60_000
/** Redis's answer to AUTH when the user needs no password: ioredis reads on, so does the lane. */
const NO_PASSWORD = /without any password configured|no password is set/i
/** Answers that are about the cluster or the script cache: ioredis knows what to do. */
const FOR_IOREDIS =
  /^(MOVED|ASK|TRYAGAIN|CLUSTERDOWN|LOADING|NOSCRIPT|READONLY|MASTERDOWN|NOAUTH|WRONGPASS|NOPERM|BUSY)\b/

/** The name the lane's connections go by in CLIENT LIST. */
export const LANE_NAME = 'cairn-read-lane'

/** Nothing waits on these answers: AUTH and the name, sent first on a new connection. */
const AUTH: LaneCall = { sha: '', keys: 0, args: [], buffers: false, resolve() {}, reject() {} }
/** A user whose ACL refuses CLIENT SETNAME still reads: its refusal is passed over. */
const NAME: LaneCall = { ...AUTH }

class Connection {
  readonly queue: LaneCall[] = []
  /** When the master last answered, or when a call was sent to an idle connection. */
  heard = Date.now()
  broken = false
  private parser: Parser

  constructor(
    readonly socket: net.Socket,
    private lost: (c: Connection) => void,
    private toIoredis: (calls: LaneCall[]) => void,
  ) {
    this.parser = new Parser({
      returnBuffers: true,
      returnReply: (reply: unknown) => this.answer(null, reply),
      returnError: (err: Error) => this.answer(err, undefined),
      returnFatalError: () => this.lose(),
    })
    socket.setNoDelay(true)
    socket.on('data', (chunk: Buffer) => this.parser.execute(chunk))
    socket.on('error', () => this.lose())
    socket.on('close', () => this.lose())
  }

  write(calls: LaneCall[], payload: string | Buffer): void {
    if (this.queue.length === 0) this.heard = Date.now()
    for (const c of calls) this.queue.push(c)
    // Not held back when the socket buffers it: a master slow to read has CALL_TIMEOUT_MS
    // before its calls go to ioredis and the buffer with the connection.
    this.socket.write(payload)
  }

  /** Closed on purpose (idle, or the store closing): nothing owed, nothing rested. */
  retire(): void {
    this.broken = true
    this.socket.destroy()
  }

  private answer(err: Error | null, reply: unknown): void {
    const call = this.queue.shift()
    this.heard = Date.now()
    if (call === undefined) return this.lose()
    if (call === AUTH || call === NAME) {
      // A password the master does not ask for is no reason to leave it (ioredis reads on).
      if (err && call === AUTH && !NO_PASSWORD.test(err.message)) this.lose()
      return
    }
    if (err === null) return call.resolve(call.buffers ? reply : strings(reply))
    if (FOR_IOREDIS.test(err.message)) return this.toIoredis([call])
    call.reject(err)
  }

  /** The connection is gone: what it still owed goes to ioredis. */
  lose(): void {
    if (this.broken) return
    this.broken = true
    this.socket.destroy()
    this.lost(this)
    const owed = this.queue.filter((c) => c !== AUTH && c !== NAME)
    this.queue.length = 0
    if (owed.length > 0) this.toIoredis(owed)
  }
}

export class ReadLane {
  readonly stats: ReadLaneStats = { calls: 0, rerouted: 0, lost: 0 }
  private conns = new Map<string, Connection>()
  private resting = new Map<string, number>()
  private closed = false
  private watchdog: NodeJS.Timeout

  constructor(
    private url: RedisUrl,
    /** Sends calls the lane gave up on through ioredis. */
    private reroute: (calls: LaneCall[]) => void,
  ) {
    this.watchdog = setInterval(() => this.check(), CALL_TIMEOUT_MS / 4)
    this.watchdog.unref()
  }

  /**
   * Sends `calls` to the master at `addr` ("host:port") in one write; false when the lane
   * does not take them now (closed, or that master lately failed it): use ioredis.
   */
  send(addr: string, calls: LaneCall[]): boolean {
    if (this.closed) return false
    let conn = this.conns.get(addr)
    if (conn === undefined) {
      const until = this.resting.get(addr)
      if (until !== undefined && Date.now() < until) return false
      conn = this.open(addr)
      if (conn === undefined) return false
    }
    conn.write(calls, encode(calls))
    this.stats.calls += calls.length
    return true
  }

  close(): void {
    this.closed = true
    clearInterval(this.watchdog)
    for (const c of this.conns.values()) {
      c.retire()
      const err = unavailable('the store is closing')
      for (const call of c.queue) call.reject(err)
      c.queue.length = 0
    }
    this.conns.clear()
  }

  private open(addr: string): Connection | undefined {
    const colon = addr.lastIndexOf(':')
    const host = addr.slice(0, colon)
    const port = Number(addr.slice(colon + 1))
    if (!host || !Number.isInteger(port)) return undefined
    const socket = this.url.tls ? tls.connect({ host, port }) : net.connect({ host, port })
    const conn = new Connection(
      socket,
      (c) => {
        if (this.conns.get(addr) === c) this.conns.delete(addr)
        if (this.closed) return
        this.stats.lost++
        this.resting.set(addr, Date.now() + REST_MS)
      },
      (calls) => this.toIoredis(calls),
    )
    this.conns.set(addr, conn)
    if (this.url.password !== undefined) {
      const auth = ['AUTH', ...(this.url.username ? [this.url.username] : []), this.url.password]
      conn.write([AUTH], command(auth))
    }
    conn.write([NAME], command(['CLIENT', 'SETNAME', LANE_NAME]))
    return conn
  }

  private toIoredis(calls: LaneCall[]): void {
    this.stats.rerouted += calls.length
    this.reroute(calls)
  }

  /**
   * A master that went quiet with calls waiting: those go to ioredis, which may fail over.
   * A connection idle for IDLE_MS is closed (its master may have become a replica, or gone),
   * and rests that are over are forgotten.
   */
  private check(): void {
    const now = Date.now()
    for (const [addr, c] of this.conns) {
      if (c.queue.length > 0 && now - c.heard > CALL_TIMEOUT_MS) c.lose()
      else if (c.queue.length === 0 && now - c.heard > IDLE_MS) {
        this.conns.delete(addr)
        c.retire()
      }
    }
    for (const [addr, until] of this.resting) if (until <= now) this.resting.delete(addr)
  }
}

/** A command as RESP. */
function command(words: readonly (string | Buffer | number)[]): string | Buffer {
  let text = `*${words.length}\r\n`
  let parts: (string | Buffer)[] | null = null
  for (const w of words) {
    if (Buffer.isBuffer(w)) {
      parts ??= []
      parts.push(text, `$${w.length}\r\n`, w, '\r\n')
      text = ''
      continue
    }
    const s = typeof w === 'string' ? w : String(w)
    text += `$${Buffer.byteLength(s)}\r\n${s}\r\n`
  }
  if (parts === null) return text
  parts.push(text)
  return Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : p)))
}

function encode(calls: LaneCall[]): string | Buffer {
  if (calls.length === 1) return command(words(calls[0]!))
  const all = calls.map((c) => command(words(c)))
  if (all.every((p) => typeof p === 'string')) return all.join('')
  return Buffer.concat(all.map((p) => (typeof p === 'string' ? Buffer.from(p) : p)))
}

function words(c: LaneCall): readonly (string | Buffer | number)[] {
  return c.words ?? ['EVALSHA', c.sha, c.keys, ...c.args]
}

/** An answer with its bulk strings as strings, as ioredis gives them for evalsha. */
function strings(v: unknown): unknown {
  if (Buffer.isBuffer(v)) return v.toString('utf8')
  if (Array.isArray(v)) return v.map(strings)
  return v
}
