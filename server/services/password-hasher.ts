// Password hashing off the thread pool. scrypt through node:crypto's async API runs on libuv's
// thread pool, the same four threads that carry the storage engine's fsyncs and reads: a
// flood of log-ins (each ~50 ms of scrypt) then stalls every tenant's writes. Here scrypt runs
// synchronously inside one worker thread of its own, and at most MAX_QUEUED hashes wait for
// it; past that a request is refused at once (429) instead of queueing without bound.
import { Worker } from 'node:worker_threads'
import { ApiError } from '../wire/errors.js'

/** Hashes waiting or running; more are refused, so a flood costs a refusal, not a queue. */
export const MAX_QUEUED = 16

const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads')
const { scryptSync } = require('node:crypto')
parentPort.on('message', ({ id, password, salt, keylen, n, r, p, maxmem }) => {
  try {
    const key = scryptSync(password, Buffer.from(salt), keylen, { N: n, r, p, maxmem })
    parentPort.postMessage({ id, key })
  } catch (err) {
    parentPort.postMessage({ id, error: String(err && err.message || err) })
  }
})
`

interface Job {
  resolve(key: Buffer): void
  reject(err: Error): void
}

let worker: Worker | null = null
const jobs = new Map<number, Job>()
let nextId = 1

function start(): Worker {
  const w = new Worker(WORKER_SOURCE, { eval: true })
  w.on('message', (m: { id: number; key?: Uint8Array; error?: string }) => {
    const job = jobs.get(m.id)
    if (!job) return
    jobs.delete(m.id)
    if (jobs.size === 0) w.unref()
    if (m.key) job.resolve(Buffer.from(m.key))
    else job.reject(new Error(`scrypt failed: ${m.error}`))
  })
  w.on('error', (err) => {
    for (const job of jobs.values()) job.reject(err)
    jobs.clear()
    worker = null
  })
  w.unref()
  return w
}

export interface ScryptParams {
  n: number
  r: number
  p: number
  keylen: number
  maxmem: number
}

/** scrypt in the hashing worker; ApiError 429 when MAX_QUEUED hashes are already waiting. */
export function scryptInWorker(password: string, salt: Buffer, o: ScryptParams): Promise<Buffer> {
  if (jobs.size >= MAX_QUEUED) {
    return Promise.reject(
      new ApiError(429, 'rate_limited', 'Too many log-ins at once; try again in a moment.', {
        'Retry-After': '1',
      }),
    )
  }
  worker ??= start()
  const w = worker
  const id = nextId++
  return new Promise((resolve, reject) => {
    jobs.set(id, { resolve, reject })
    // Held while it has work, so a command-line process waits for its hash.
    w.ref()
    w.postMessage({ id, password, salt: new Uint8Array(salt), ...o })
  })
}

/** Hashes waiting or running now (a metric). */
export function queuedHashes(): number {
  return jobs.size
}
