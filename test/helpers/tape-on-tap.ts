// A `test` function with tape's semantics, for suites written against tape (abstract-level's
// own), run as tap subtests. Every assertion keeps tape's meaning, none is loosened: `is` is
// Object.is, `same` is a strict deep equality, `throws` takes tape's validation function, and
// a plan is exact (tape ends a test the tick its plan is met, or when its promise resolves,
// and then fails it if the count differs). A test that never ends fails after `timeoutMs`.
import type { Test } from 'tap'

type Body = (t: Tape) => unknown

export interface Tape {
  plan(n: number): void
  end(err?: unknown): void
  is(found: unknown, wanted: unknown, msg?: string): void
  equal(found: unknown, wanted: unknown, msg?: string): void
  strictEqual(found: unknown, wanted: unknown, msg?: string): void
  isNot(found: unknown, wanted: unknown, msg?: string): void
  notEqual(found: unknown, wanted: unknown, msg?: string): void
  same(found: unknown, wanted: unknown, msg?: string): void
  deepEqual(found: unknown, wanted: unknown, msg?: string): void
  notSame(found: unknown, wanted: unknown, msg?: string): void
  ok(value: unknown, msg?: string): void
  notOk(value: unknown, msg?: string): void
  pass(msg?: string): void
  fail(msg?: string): void
  error(err: unknown, msg?: string): void
  ifError(err: unknown, msg?: string): void
  throws(fn: () => unknown, expected?: unknown, msg?: string): void
  doesNotThrow(fn: () => unknown, msg?: string): void
  comment(msg: string): void
  test(name: string, body: Body): void
}

export type TapeTest = ((name: string, ...rest: unknown[]) => void) & {
  skip(name: string, ...rest: unknown[]): void
  only(name: string, ...rest: unknown[]): void
}

/** A tape-style `test` whose tests are subtests of `tap`, run one after another. */
export function tapeOn(tap: Test, timeoutMs = 60_000): TapeTest {
  const add = (name: string, rest: unknown[], skip: boolean) => {
    const body = rest.at(-1) as Body
    const opts = (rest.length > 1 ? rest[0] : {}) as { skip?: boolean }
    if (skip || opts.skip) tap.test(name, { skip: 'skipped by the suite itself' }, () => {})
    else tap.test(name, (tt) => run(tt, body, timeoutMs))
  }
  const test = ((name: string, ...rest: unknown[]) => add(name, rest, false)) as TapeTest
  test.skip = (name, ...rest) => add(name, rest, true)
  test.only = () => {
    throw new Error('test.only would silently drop the rest of the suite')
  }
  return test
}

function run(tt: Test, body: Body, timeoutMs: number): Promise<void> {
  return new Promise<void>((resolve) => {
    let planned: number | undefined
    let count = 0
    let ended = false
    let bodyDone = false
    let released = false
    const timer = setTimeout(() => {
      if (!ended) tt.fail(`test did not end within ${timeoutMs} ms (no end(), plan unmet)`)
      ended = true
      bodyDone = true
      release()
    }, timeoutMs)
    const release = () => {
      if (released || !ended || !bodyDone) return
      released = true
      clearTimeout(timer)
      resolve()
    }
    const finish = () => {
      if (ended) return
      ended = true
      if (planned !== undefined && count !== planned)
        tt.fail(`plan != count: planned ${planned} assertions, ran ${count}`)
      release()
    }
    const counted = () => {
      if (ended) tt.fail('assertion after the test ended')
      count++
      if (planned !== undefined && count === planned) process.nextTick(finish)
    }
    const t: Tape = {
      plan(n) {
        planned = n
      },
      end(err) {
        if (err) t.error(err)
        if (ended) tt.fail('end() called after the test ended')
        finish()
      },
      is(found, wanted, msg) {
        counted()
        tt.ok(Object.is(found, wanted), msg ?? 'should be equal', { found, wanted })
      },
      equal: (a, b, m) => t.is(a, b, m),
      strictEqual: (a, b, m) => t.is(a, b, m),
      isNot(found, wanted, msg) {
        counted()
        tt.ok(!Object.is(found, wanted), msg ?? 'should not be equal', { found, doNotWant: wanted })
      },
      notEqual: (a, b, m) => t.isNot(a, b, m),
      same(found, wanted, msg) {
        counted()
        tt.strictSame(found, wanted, msg ?? 'should be equivalent')
      },
      deepEqual: (a, b, m) => t.same(a, b, m),
      notSame(found, wanted, msg) {
        counted()
        tt.strictNotSame(found, wanted, msg ?? 'should not be equivalent')
      },
      ok(value, msg) {
        counted()
        tt.ok(value, msg ?? 'should be truthy')
      },
      notOk(value, msg) {
        counted()
        tt.notOk(value, msg ?? 'should be falsy')
      },
      pass(msg) {
        counted()
        tt.pass(msg ?? 'pass')
      },
      fail(msg) {
        counted()
        tt.fail(msg ?? 'fail')
      },
      error(err, msg) {
        counted()
        tt.error(err, msg ?? String(err))
      },
      ifError: (err, msg) => t.error(err, msg),
      throws(fn, expected, msg) {
        if (typeof expected === 'string') {
          msg = expected
          expected = undefined
        }
        counted()
        let threw = false
        let caught: unknown
        try {
          fn()
        } catch (err) {
          threw = true
          caught = err
        }
        tt.ok(threw && matches(caught, expected), msg ?? 'should throw', { found: caught })
      },
      doesNotThrow(fn, msg) {
        counted()
        try {
          fn()
          tt.pass(msg ?? 'should not throw')
        } catch (err) {
          tt.fail(msg ?? 'should not throw', { found: err })
        }
      },
      comment: (msg) => tt.comment(msg),
      test(name, inner) {
        tt.test(name, (sub) => run(sub, inner, timeoutMs))
      },
    }
    let returned: unknown
    try {
      returned = body(t)
    } catch (err) {
      tt.fail('the test threw', { found: err })
      bodyDone = true
      finish()
      return
    }
    if (
      returned instanceof Promise ||
      typeof (returned as { then?: unknown })?.then === 'function'
    ) {
      Promise.resolve(returned).then(
        () => {
          bodyDone = true
          finish()
          release()
        },
        (err) => {
          if (ended) tt.fail('the test rejected after it ended', { found: err })
          else t.error(err instanceof Error ? err : new Error(String(err)))
          bodyDone = true
          finish()
          release()
        },
      )
    } else {
      bodyDone = true
      release()
    }
  })
}

/** tape's rule for `throws(fn, expected)`. */
function matches(caught: unknown, expected: unknown): boolean {
  if (expected === undefined) return true
  if (expected instanceof RegExp) return expected.test(String(caught))
  if (typeof expected === 'function') {
    if (expected.prototype !== undefined && caught instanceof expected) return true
    if (Object.prototype.isPrototypeOf.call(Error, expected)) return false
    return (expected as (e: unknown) => unknown).call({}, caught) === true
  }
  if (expected !== null && typeof expected === 'object') {
    const got = caught as Record<string, unknown>
    return Object.entries(expected).every(([k, v]) => got != null && Object.is(got[k], v))
  }
  return false
}
