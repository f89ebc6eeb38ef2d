// Background work (compaction, the checkpoint walk) runs in slices of a few milliseconds
// between requests. Requests come first: after a slice the work yields to the event loop, and
// when other work ran in that turn (the loop is busy) it waits long enough to keep its share
// of the loop to SHARE. Alone on the loop, it goes straight on.

/** The most of a busy event loop background work takes: a 2 ms slice, then 6 ms for others. */
const SHARE = 0.25
/** Other work in a yield longer than this means the loop is busy. */
const BUSY_MS = 0.2

/** Yields after a slice of `usedMs` of background work. */
export async function yieldToRequests(usedMs: number): Promise<void> {
  const at = performance.now()
  await new Promise((r) => setImmediate(r))
  if (performance.now() - at > BUSY_MS)
    await new Promise((r) => setTimeout(r, (usedMs * (1 - SHARE)) / SHARE))
}
