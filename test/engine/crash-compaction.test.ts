// SIGKILL a real writer while it compacts in a loop; nothing acknowledged may be lost or revived.
import t from 'tap'
import { crashIterations } from './crash-check.js'

t.test('kill -9 during compaction', (t) =>
  crashIterations(t, {
    mode: 'compact',
    iterations: 20,
    budgetMs: 45_000,
    options: {
      segmentBytes: 8 * 1024,
      compactionMinDeadBytes: 16 * 1024,
      compactionDeadRatio: 0.3,
    },
  }),
)
