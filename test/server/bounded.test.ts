// Every per-client map is bounded: a flood of distinct addresses, emails or keys leaves each
// at or under its bound (the real classes, with small bounds so the test is quick).
import t from 'tap'
import { Throttle } from '../../server/dashboard/throttle.js'
import { AddressLimiter } from '../../server/services/limits.js'

t.test('the per-address limiter holds at most its bound, and still limits', async (t) => {
  const limiter = new AddressLimiter(20, 2, 1000)
  const now = Date.now()
  for (let i = 0; i < 20_000; i++) limiter.take(`10.0.${i >> 8}.${i & 255}`, now)
  t.equal(limiter.size, 1000, 'bounded at 1000 after 20,000 addresses')
  let refused = 0
  for (let i = 0; i < 30; i++) if (!limiter.take('192.0.2.1', now).ok) refused++
  t.equal(refused, 10, 'one address still gets its burst of 20 and no more')
})

t.test('throttles hold at most their bound, and still throttle', async (t) => {
  const throttle = new Throttle(5, 60_000, 1000)
  const now = Date.now()
  for (let i = 0; i < 20_000; i++) throttle.fail(`user${i}@example.com`, now)
  t.equal(throttle.size, 1000, 'bounded at 1000 after 20,000 emails')
  for (let i = 0; i < 5; i++) throttle.fail('victim@example.com', now)
  t.ok(throttle.retryAfter('victim@example.com', now) > 0, 'five failures still throttle')
  throttle.undo('victim@example.com')
  t.equal(throttle.retryAfter('victim@example.com', now), 0, 'an attempt taken back frees a slot')
})
