// The event loop's delay as /metrics reports it: a loop held up shows in the window that
// held it, and a read starts a new window.
import t from 'tap'
import { LoopDelayMonitor } from '../../server/loop-delay.js'

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

t.test(
  'a loop held for 60 ms shows as the largest delay, then the next window starts',
  async (t) => {
    const m = new LoopDelayMonitor()
    t.teardown(() => m.stop())
    await sleep(20)
    m.read()
    await sleep(10) // the first tick after a read only starts the next interval
    const until = performance.now() + 60
    while (performance.now() < until) {}
    await sleep(20) // the late timer fires and is recorded
    const held = m.read()
    t.ok(held.max >= 0.05, `largest delay ${held.max} s`)
    t.ok(
      held.p999 <= held.max && held.p99 <= held.p999 && held.p50 <= held.p99,
      'quantiles in order',
    )
    t.ok(held.samples > 0)
    await sleep(30)
    const after = m.read()
    t.ok(after.samples > 0, 'the timer kept sampling')
    t.ok(after.max < held.max, `the new window does not hold the old delay (${after.max} s)`)
  },
)

t.test('a window with no samples reads as zeros', async (t) => {
  const m = new LoopDelayMonitor()
  t.teardown(() => m.stop())
  const d = m.read()
  t.same(d, { p50: 0, p99: 0, p999: 0, max: 0, samples: 0 })
})
