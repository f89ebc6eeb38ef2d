// The test clock (services/clock.ts) and the guards that keep it off any server others reach
// (config.ts): taken only as exactly "1", on loopback, on the embedded store, outside
// NODE_ENV=production.
import t from 'tap'
import { ConfigError, serveConfig } from '../../server/config.js'
import { TestClock, wallClock } from '../../server/services/clock.js'

const config = (flags: Record<string, string>, env: Record<string, string>) =>
  serveConfig(new Map(Object.entries(flags)), env)
const loopback = { '--host': '127.0.0.1' }

t.test('taken on loopback, as exactly 1', async (t) => {
  t.equal(config(loopback, { CAIRN_TEST_CLOCK: '1' }).testClock, true)
  t.equal(config({ '--host': '::1' }, { CAIRN_TEST_CLOCK: '1' }).testClock, true)
  t.equal(config(loopback, {}).testClock, false, 'unset: the wall clock')
  t.equal(config(loopback, { CAIRN_TEST_CLOCK: '' }).testClock, false)
})

t.test('refused anywhere a server could be reached or mistaken', async (t) => {
  const refused: [Record<string, string>, Record<string, string>, RegExp][] = [
    [{}, { CAIRN_TEST_CLOCK: '1' }, /loopback/],
    [{ '--host': '0.0.0.0' }, { CAIRN_TEST_CLOCK: '1' }, /loopback/],
    [loopback, { CAIRN_TEST_CLOCK: 'yes' }, /is 1/],
    [loopback, { CAIRN_TEST_CLOCK: '0' }, /is 1/],
    [loopback, { CAIRN_TEST_CLOCK: '1', NODE_ENV: 'production' }, /production/],
    [
      { ...loopback, '--store': 'redis://127.0.0.1:7000' },
      { CAIRN_TEST_CLOCK: '1' },
      /Redis keeps its own time/,
    ],
  ]
  for (const [flags, env, why] of refused)
    t.throws(
      () => config(flags, env),
      { constructor: ConfigError, message: why },
      JSON.stringify({ flags, env }),
    )
})

t.test('stands still, and moves forward only when told', async (t) => {
  const c = new TestClock()
  const start = c.now()
  t.ok(Math.abs(start - Date.now()) < 60_000, 'starts at the wall time')
  await new Promise((r) => setTimeout(r, 20))
  t.equal(c.now(), start, 'time does not pass by itself')
  t.equal(c.advance(3_600_000), start + 3_600_000, 'an hour at once')
  t.equal(c.now(), start + 3_600_000)
  t.throws(() => c.advance(-1), RangeError, 'never back')
  t.throws(() => c.advance(Number.NaN), RangeError)
  t.ok(wallClock.now() >= start, 'the wall clock is the wall')
})
