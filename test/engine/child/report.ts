// What the crash-test children share: a seeded random source, so a failing run can be
// repeated from its seed, and `say`, one JSON line on stdout that is wholly in the pipe before
// the child goes on (the parent reads what was attempted and acknowledged before the kill).
import fs from 'node:fs'

/** A seeded source of numbers in [0, 1) (mulberry32), and its state now. */
export function seeded(start: number): { rand: () => number; state: () => number } {
  let seed = start >>> 0
  const rand = () => {
    seed = (seed + 0x6d2b79f5) >>> 0
    let x = seed
    x = Math.imul(x ^ (x >>> 15), x | 1)
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61)
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296
  }
  return { rand, state: () => seed }
}

// stdout is a non-blocking pipe: retry on EAGAIN so a line is fully in the pipe before we go on.
const pause = new Int32Array(new SharedArrayBuffer(4))

/** Writes `o` as one JSON line on stdout, synchronously. */
export function say(o: object): void {
  let buf = Buffer.from(`${JSON.stringify(o)}\n`)
  while (buf.length > 0) {
    try {
      buf = buf.subarray(fs.writeSync(1, buf))
    } catch (err) {
      if ((err as { code?: string }).code !== 'EAGAIN') throw err
      Atomics.wait(pause, 0, 0, 1)
    }
  }
}
