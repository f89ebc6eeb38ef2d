// Background work (compaction, the checkpoint walk) runs in slices of half a millisecond
// between requests. Requests come first: after a slice the work yields to the event loop, and
// when other work ran in that turn (the loop is busy) it waits long enough to keep its share
// of the loop to SHARE. Alone on the loop, it goes straight on.

/**
 * How long a slice of background work runs before it yields. A request that arrives during
 * a slice waits for it, so this bounds what background work adds to a request's latency.
 * Half a millisecond: GETs during back-to-back compactions (bench:http) had a p99 0.5-1.1 ms
 * lower than with 1 ms slices, at the same throughput, in two runs each (bench/RESULTS.md).
 */
export const SLICE_MS = 0.5
/**
 * The most of a busy event loop background work takes unless it says otherwise: a 0.5 ms
 * slice, then 4.5 ms for others. Compaction asks for more while garbage piles up (compaction.ts).
 */
export const SHARE = 0.1
/** Other work in a yield longer than this means the loop is busy. */
const BUSY_MS = 0.2

/** Yields after a slice of `usedMs` of background work, keeping to `share` of a busy loop. */
export async function yieldToRequests(usedMs: number, share = SHARE): Promise<void> {
  const at = performance.now()
  await new Promise((r) => setImmediate(r))
  if (performance.now() - at > BUSY_MS)
    await new Promise((r) => setTimeout(r, (usedMs * (1 - share)) / share))
}
