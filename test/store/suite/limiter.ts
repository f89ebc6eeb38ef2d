// Token buckets: a new bucket is full, takes its burst and refuses the next with the time
// until a token is back, has one again after that time, and takes a cost of several tokens at once.
import type { Test } from 'tap'
import type { Bucket, Store } from '../../../server/store/types.js'

const fresh = (): Bucket => ({ ok: false, limit: 0, remaining: 0, reset: 0, retryAfter: 0 })

export async function limiterSuite(t: Test, store: Store): Promise<void> {
  const take = async (id: string, now: number, cost?: number) => {
    const out = fresh()
    return { ...(await store.limiter.take(id, 1, 5, now, out, cost)) }
  }
  const id = `suite-${process.pid}-${Date.now()}`
  const now = Date.now()
  let admitted = 0
  for (let i = 0; i < 5; i++) if ((await take(id, now)).ok) admitted++
  t.equal(admitted, 5, 'a new bucket gives its burst')
  const refused = await take(id, now)
  t.equal(refused.ok, false, 'and refuses past it')
  t.ok(refused.retryAfter >= 1, `saying when to come back (${refused.retryAfter} s)`)
  t.equal(refused.limit, 5, 'the limit is the burst')
  // A shared store keeps its own time, so the refill is waited for, as long as it said.
  await new Promise((r) => setTimeout(r, refused.retryAfter * 1000 + 100))
  t.ok((await take(id, Date.now())).ok, 'after retryAfter a token is back')
  const other = `${id}-cost`
  t.ok((await take(other, now, 4)).ok, 'a cost of 4 from a full bucket of 5')
  t.equal((await take(other, now, 4)).ok, false, 'not another 4 at once')
}
