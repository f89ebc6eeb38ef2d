// SIGKILL a real writer at random moments; every acknowledged write must survive.
import t from 'tap'
import { crashIterations } from './crash-check.js'

t.test('kill -9 during puts, deletes, batches and increments', (t) =>
  crashIterations(t, {
    mode: 'writes',
    iterations: 25,
    budgetMs: 45_000,
    options: { segmentBytes: 32 * 1024 },
  }),
)
