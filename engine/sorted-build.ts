// Building a namespace's sorted key list after open. A small namespace is sorted at once;
// a large one (a million keys take the better part of a second to sort) is sorted in the
// background, a slice at a time, so `open` returns as soon as the key-to-position map is
// ready: gets and writes work at once, and listings of that namespace wait for the build.
// Writes made meanwhile are noted and applied to the finished list.
import type { Namespace } from './parts.js'
import { SortedKeys } from './sorted-keys.js'
import { compareKeys, hasHighUnits, sortKeys } from './utf8.js'

/** Namespaces up to this many keys are sorted while opening. */
export const SORT_NOW = 50_000
const RUN = 16_384
const SLICE_MS = 4

const tick = () => new Promise<void>((r) => setImmediate(r))

export function sortNow(n: Namespace): void {
  const sorted = sortKeys([...n.map.keys()])
  n.keys = SortedKeys.from(sorted.keys, sorted.wide)
}

/** Starts the background build; `n.building` resolves when listings may go ahead. */
export function sortLater(n: Namespace, closed: () => boolean): void {
  n.changes = new Map()
  n.building = build(n, closed).finally(() => {
    n.building = null
  })
}

async function build(n: Namespace, closed: () => boolean): Promise<void> {
  const all: string[] = []
  let wide = false
  let start = performance.now()
  const maybeYield = async () => {
    if (performance.now() - start < SLICE_MS) return
    await tick()
    start = performance.now()
  }
  for (const key of n.map.keys()) {
    all.push(key)
    if (!wide && hasHighUnits(key)) wide = true
    if ((all.length & 4095) === 0) await maybeYield()
  }
  const before = wide
    ? (a: string, b: string) => compareKeys(a, b) < 0
    : (a: string, b: string) => a < b
  // Sorted runs of a few thousand keys, each a short synchronous sort...
  const runs: string[][] = []
  for (let i = 0; i < all.length; i += RUN) {
    const run = all.slice(i, i + RUN)
    run.sort(wide ? compareKeys : undefined)
    runs.push(run)
    await maybeYield()
    if (closed()) return
  }
  // ...then merged through a heap of run heads, a slice at a time.
  const heads = new Int32Array(runs.length)
  const heap: number[] = []
  const less = (x: number, y: number) => before(runs[x]![heads[x]!]!, runs[y]![heads[y]!]!)
  const up = (i: number) => {
    while (i > 0) {
      const p = (i - 1) >> 1
      if (!less(heap[i]!, heap[p]!)) break
      ;[heap[i], heap[p]] = [heap[p]!, heap[i]!]
      i = p
    }
  }
  const down = (i: number) => {
    for (;;) {
      const l = 2 * i + 1
      const r = l + 1
      let m = i
      if (l < heap.length && less(heap[l]!, heap[m]!)) m = l
      if (r < heap.length && less(heap[r]!, heap[m]!)) m = r
      if (m === i) return
      ;[heap[i], heap[m]] = [heap[m]!, heap[i]!]
      i = m
    }
  }
  for (let r = 0; r < runs.length; r++) {
    heap.push(r)
    up(heap.length - 1)
  }
  // A key deleted and written again while the map was being walked is met twice (a Map's
  // iterator visits a re-inserted entry again): equal neighbours are kept once.
  const sorted: string[] = []
  for (let o = 0; heap.length > 0; o++) {
    const r = heap[0]!
    const key = runs[r]![heads[r]!]!
    if (sorted.length === 0 || sorted[sorted.length - 1] !== key) sorted.push(key)
    if (++heads[r]! === runs[r]!.length) {
      heap[0] = heap[heap.length - 1]!
      heap.pop()
    }
    if (heap.length > 0) down(0)
    if ((o & 4095) === 0) {
      await maybeYield()
      if (closed()) return
    }
  }
  const keys = SortedKeys.from(sorted, wide)
  // Writes made during the build: the map says whether each key is there now.
  for (const key of n.changes!.keys()) {
    if (n.map.has(key)) keys.insert(key)
    else keys.remove(key)
  }
  n.keys = keys
  n.changes = null
}
