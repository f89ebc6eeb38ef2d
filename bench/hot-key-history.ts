// What a hot key in a history window costs the writes after it: the engine on a real
// directory, one namespace per shape, each with a window of --window-mib (16) that the writes
// fill. `hot`: --hot N (400,000) overwrites of one key first (as bench:http's INCR case
// leaves it); `spread`: the same number of overwrites over the data set's keys. Then PUTs of
// the data set's keys (20,000), whose window drops the oldest versions kept (in `hot`, the
// hot key's) for up to --seconds S (10) each; durability none, so the figure is the engine's
// CPU, not the disk's. Prints microseconds per PUT and hot's beside spread's.
//   node --import tsx bench/hot-key-history.ts [--hot N] [--window-mib M] [--seconds S]
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { open } from '../engine/index.js'

const argv = process.argv.slice(2)
const opt = (name: string, def: number) =>
  argv.includes(name) ? Number(argv[argv.indexOf(name) + 1]) : def
const HOT = opt('--hot', 400_000)
const WINDOW_BYTES = opt('--window-mib', 16) * 1024 * 1024
const SECONDS = opt('--seconds', 10)
const KEYS = 20_000
const AT_ONCE = 64
const VALUE = 'v'.repeat(96)

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-hot-key-'))
const db = await open(dir, { durability: 'none', autoCompact: false })

/** Runs `put(i)` for i from 0, AT_ONCE at a time, `count` times or until `ms` have passed. */
async function puts(count: number, ms: number, put: (i: number) => Promise<unknown>) {
  const start = performance.now()
  let done = 0
  while (done < count && performance.now() - start < ms) {
    const batch: Promise<unknown>[] = []
    for (let j = 0; j < AT_ONCE && done < count; j++) batch.push(put(done++))
    await Promise.all(batch)
  }
  return { done, ms: performance.now() - start }
}

const results: Record<string, number> = {}
try {
  for (const shape of ['spread', 'hot'] as const) {
    await db.createNamespace(shape)
    db.setHistory(shape, { seconds: 86_400, bytes: WINDOW_BYTES })
    for (let i = 0; i < KEYS; i += AT_ONCE)
      await Promise.all(
        Array.from({ length: Math.min(AT_ONCE, KEYS - i) }, (_, j) =>
          db.put(shape, `k${i + j}`, VALUE),
        ),
      )
    await puts(HOT, Number.POSITIVE_INFINITY, (i) =>
      shape === 'hot' ? db.put(shape, 'hot', i) : db.put(shape, `k${i % KEYS}`, i),
    )
    const r = await puts(Number.POSITIVE_INFINITY, SECONDS * 1000, (i) =>
      db.put(shape, `k${(i * 7919) % KEYS}`, VALUE),
    )
    results[shape] = (r.ms * 1000) / r.done
    process.stdout.write(
      `${shape}: ${HOT} overwrites first, then ${r.done} PUTs in ${(r.ms / 1000).toFixed(1)} s: ${results[shape]!.toFixed(1)} us per PUT (history ${db.namespaceStats(shape)!.historyBytes} bytes)\n`,
    )
  }
  process.stdout.write(`hot / spread: ${(results.hot! / results.spread!).toFixed(2)}x\n`)
} finally {
  await db.close()
  fs.rmSync(dir, { recursive: true, force: true })
}
