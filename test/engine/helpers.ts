// Shared plumbing for the engine's black-box tests: temp directories, seeded randomness,
// error-code assertions and a child-process runner. Nothing here imitates the engine.
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Db } from '../../engine/index.js'
import { io } from '../../engine/io.js'
import { reapWithMe } from '../helpers/reaper.js'

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')

interface Teardown {
  teardown(fn: () => unknown): void
}

/** A fresh directory under the OS temp dir, removed when the test ends. */
export function tempDir(t: Teardown, label = 'engine'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `cairn-${label}-`))
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }))
  return dir
}

/** Total size of every file under dir. */
export function dirBytes(dir: string): number {
  let total = 0
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name)
    if (entry.isDirectory()) total += dirBytes(p)
    else if (entry.isFile()) total += fs.statSync(p).size
  }
  return total
}

/** A database directory's segment files, oldest first. */
export function segmentFiles(dir: string): string[] {
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.seg'))
    .sort()
    .map((f) => path.join(dir, f))
}

/** A copy of a database's files as a crash of the process holding it leaves them. */
export function crashCopy(from: string, to: string): void {
  for (const f of fs.readdirSync(from))
    if (f !== 'LOCK') fs.copyFileSync(path.join(from, f), path.join(to, f))
}

/** mulberry32: small, fast and reproducible from a 32-bit seed. */
export function rng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let x = a
    x = Math.imul(x ^ (x >>> 15), x | 1)
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61)
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296
  }
}

export function seedFromEnv(name: string): number {
  const given = process.env[name]
  return given ? Number(given) : Math.floor(Math.random() * 2 ** 31)
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Resolves with the error's code, or 'RESOLVED' when the promise did not reject. */
export async function errorCode(p: Promise<unknown> | (() => unknown)): Promise<string> {
  try {
    await (typeof p === 'function' ? p() : p)
    return 'RESOLVED'
  } catch (err) {
    return String((err as { code?: unknown }).code ?? `no code: ${(err as Error).message}`)
  }
}

/** The error itself, or undefined when the promise resolved. */
export async function caught(
  p: Promise<unknown>,
): Promise<(Error & { code?: string }) | undefined> {
  try {
    await p
    return undefined
  } catch (err) {
    return err as Error & { code?: string }
  }
}

/** Byte order of two strings as UTF-8, which is code-point order. */
export function compareUtf8(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'))
}

export interface Child {
  pid: number
  lines: string[]
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  kill(signal?: NodeJS.Signals): void
  /** Resolves when a line satisfying pred has arrived. */
  waitFor(pred: (line: string) => boolean, timeoutMs?: number): Promise<string>
  stderr(): string
}

/** Runs a TypeScript script in a real child process (node --import tsx). */
export function runChild(script: string, args: string[]): Child {
  const proc = spawn(process.execPath, ['--import', 'tsx', script, ...args], {
    cwd: repoRoot,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  // A crash test kills its children itself; this one ends them if the test is killed first.
  if (proc.pid !== undefined) reapWithMe([proc.pid])
  const lines: string[] = []
  let partial = ''
  let err = ''
  const waiters: { pred: (l: string) => boolean; resolve: (l: string) => void }[] = []
  proc.stdout.setEncoding('utf8')
  proc.stdout.on('data', (chunk: string) => {
    partial += chunk
    const parts = partial.split('\n')
    partial = parts.pop()!
    for (const line of parts) {
      lines.push(line)
      for (let i = waiters.length - 1; i >= 0; i--) {
        if (waiters[i].pred(line)) {
          waiters[i].resolve(line)
          waiters.splice(i, 1)
        }
      }
    }
  })
  proc.stderr.setEncoding('utf8')
  proc.stderr.on('data', (chunk: string) => {
    err += chunk
  })
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    // 'close' waits for stdout to drain, so every line the child wrote is in `lines`.
    proc.on('close', (code, signal) => resolve({ code, signal }))
  })
  return {
    pid: proc.pid!,
    lines,
    exited,
    kill: (signal = 'SIGKILL') => {
      proc.kill(signal)
    },
    waitFor(pred, timeoutMs = 20_000) {
      const hit = lines.find(pred)
      if (hit !== undefined) return Promise.resolve(hit)
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`child sent no matching line in ${timeoutMs} ms; stderr: ${err}`)),
          timeoutMs,
        )
        const done = (l: string) => {
          clearTimeout(timer)
          resolve(l)
        }
        waiters.push({ pred, resolve: done })
        exited.then(() => {
          clearTimeout(timer)
          reject(new Error(`child exited before a matching line; stderr: ${err}`))
        })
      })
    },
    stderr: () => err,
  }
}

/** Puts `count` keys, key(i) holding i, in batches of `per`. */
export async function putNumbered(
  db: Db,
  ns: string,
  count: number,
  key: (i: number) => string,
  per = 1000,
): Promise<void> {
  for (let b = 0; b < count; b += per)
    await db.batch(
      Array.from({ length: Math.min(per, count - b) }, (_, j) => ({
        type: 'put' as const,
        ns,
        key: key(b + j),
        value: b + j,
      })),
    )
}

/**
 * Counts the bytes the engine reads from its files (through its I/O module, which it wraps
 * until the test ends); `bytes()` tells how many so far, `reset()` starts again.
 */
export function countReads(t: Teardown): { bytes(): number; reset(): void } {
  const read = io.read
  t.teardown(() => {
    io.read = read
  })
  let bytes = 0
  io.read = async (...args: Parameters<typeof read>) => {
    const n = await read.apply(io, args)
    bytes += n
    return n
  }
  return {
    bytes: () => bytes,
    reset: () => {
      bytes = 0
    },
  }
}
