// Processes a test starts end with the test process, however it ends: a timeout's SIGKILL
// or a crash runs none of its teardowns. One small shell per call watches this process and
// the children named; when this process is gone it kills them, and when they are all gone it
// ends by itself, so nothing a test started is found running after the suite.
import { type ChildProcess, spawn } from 'node:child_process'

export function reapWithMe(pids: number[]): void {
  const live = pids.filter((p) => Number.isInteger(p) && p > 0)
  if (live.length === 0) return
  const script = [
    `P=${process.pid}; C="${live.join(' ')}"`,
    'while kill -0 $P 2>/dev/null; do',
    '  alive=0; for c in $C; do kill -0 $c 2>/dev/null && alive=1; done',
    '  [ $alive = 1 ] || exit 0',
    '  sleep 1',
    'done',
    'kill -9 $C 2>/dev/null; exit 0',
  ].join('\n')
  const watcher = spawn('sh', ['-c', script], { stdio: 'ignore', detached: true })
  watcher.unref()
}

interface Teardowns {
  teardown(fn: () => unknown): void
}

/**
 * A child a test starts ends with the test: killed by the test's teardown when the test ends
 * (passed, failed, or timed out inside tap, which runs teardowns), and by the watcher above
 * when this process dies without running them.
 */
export function endsWithTest<C extends ChildProcess>(t: Teardowns, child: C): C {
  if (child.pid !== undefined) reapWithMe([child.pid])
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  })
  return child
}
