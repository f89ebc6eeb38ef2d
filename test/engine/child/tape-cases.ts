// Tests written as tape would have them, each named for whether tape passes or fails it,
// run through tapeOn (test/helpers/tape-on-tap.ts) by test/engine/tape-on-tap.test.ts.
import t from 'tap'
import { tapeOn } from '../../helpers/tape-on-tap.js'

const test = tapeOn(t, 2000)
test('fails: is compares with Object.is', (t) => {
  t.is(0, -0)
  t.end()
})
test('fails: same tells a Buffer from a Uint8Array', (t) => {
  t.same(Buffer.from([1]), Uint8Array.from([1]))
  t.end()
})
test('fails: same is strict', (t) => {
  t.same({ a: 1 }, { a: '1' })
  t.end()
})
test('fails: an async test ends short of its plan', async (t) => {
  t.plan(2)
  t.pass()
})
test('fails: more assertions than planned', (t) => {
  t.plan(1)
  t.pass()
  t.pass()
})
test('fails: throws with a validation function that says no', (t) => {
  t.throws(
    () => {
      throw new Error('x')
    },
    (e: { code?: string }) => e.code === 'Y',
  )
  t.end()
})
test('fails: throws when nothing is thrown', (t) => {
  t.throws(() => {})
  t.end()
})
test('fails: a test that never ends', (t) => {
  t.pass()
})
test('fails: a rejected promise', async () => {
  throw new Error('boom')
})
test('fails: isNot of the same value', (t) => {
  t.isNot(1, 1)
  t.end()
})
test('passes: a plan met in an async test', async (t) => {
  t.plan(2)
  t.throws(
    () => {
      throw Object.assign(new Error('x'), { code: 'Y' })
    },
    (e: { code?: string }) => e.code === 'Y',
  )
  t.same([Buffer.from([1])], [Buffer.from([1])])
})
test('passes: end() after assertions', (t) => {
  t.is(1, 1)
  t.ok(true)
  t.doesNotThrow(() => {})
  t.end()
})
