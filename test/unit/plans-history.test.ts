// The plans file's history fields: the contract's defaults when left out, checked when given.
import t from 'tap'
import { parsePlans } from '../../server/services/plans.js'
import { parsePoint } from '../../server/wire/point.js'

const file = (plans: object[]) => JSON.stringify({ plans, default: plans.length ? 'free' : '' })

t.test('left out: free 1 day / 64 MiB, pro 7 days / 4 GiB, scale 30 days / 64 GiB', async (t) => {
  const got = parsePlans(
    file([{ id: 'free' }, { id: 'pro' }, { id: 'scale' }, { id: 'team' }]),
    'plans.json',
  )
  t.same(
    got.plans.map((p) => [p.id, p.historySeconds, p.historyBytes]),
    [
      ['free', 86_400, 64 * 2 ** 20],
      ['pro', 7 * 86_400, 4 * 2 ** 30],
      ['scale', 30 * 86_400, 64 * 2 ** 30],
      ['team', 86_400, 64 * 2 ** 20],
    ],
  )
})

t.test('given: whole numbers >= 0, 0 keeping none', async (t) => {
  const got = parsePlans(file([{ id: 'free', historySeconds: 0, historyBytes: 10 }]), 'p')
  t.equal(got.plans[0]!.historySeconds, 0)
  t.equal(got.plans[0]!.historyBytes, 10)
  for (const bad of [-1, 1.5, '60', null]) {
    t.throws(
      () => parsePlans(file([{ id: 'free', historySeconds: bad }]), 'p'),
      { message: 'p: plans[0].historySeconds must be a whole number >= 0 (0 keeps no history)' },
      `historySeconds ${JSON.stringify(bad)} is refused`,
    )
    t.throws(() => parsePlans(file([{ id: 'free', historyBytes: bad }]), 'p'), {
      message: 'p: plans[0].historyBytes must be a whole number >= 0 (0 keeps no history)',
    })
  }
})

t.test('the server/plans.json defaults are the contract’s', async (t) => {
  const { DEFAULT_PLANS_FILE, loadPlans } = await import('../../server/services/plans.js')
  const got = loadPlans(DEFAULT_PLANS_FILE).plans
  t.same(
    got.map((p) => [p.id, p.historySeconds, p.historyBytes]),
    [
      ['free', 86_400, 64 * 2 ** 20],
      ['pro', 7 * 86_400, 4 * 2 ** 30],
      ['scale', 30 * 86_400, 64 * 2 ** 30],
    ],
  )
})

t.test('points: a version or an RFC 3339 time', async (t) => {
  t.same(parsePoint('0'), { version: 0 })
  t.same(parsePoint('42'), { version: 42 })
  t.same(parsePoint('2026-12-01T10:00:00Z'), { at: Date.UTC(2026, 11, 1, 10) })
  t.same(parsePoint('2026-12-01T11:00:00.5+01:00'), { at: Date.UTC(2026, 11, 1, 10, 0, 0, 500) })
  t.same(parsePoint('2026-12-01T10:00:00.123456789Z'), { at: Date.UTC(2026, 11, 1, 10, 0, 0, 123) })
  for (const bad of [
    '',
    '-1',
    '1.5',
    '1e3',
    'now',
    '2026-12-01',
    '2026-12-01T10:00Z',
    '2026-02-30T00:00:00Z',
    '2026-12-01T10:00:00',
  ])
    t.equal(parsePoint(bad), undefined, `${JSON.stringify(bad)} is no point`)
})
