// History after a crash whose window lacks its last records: recovery replays the log and
// keeps what those writes superseded, on a real engine in a real directory, with the files
// left as a crash leaves them (crashCopy) and the window cut back to before those writes.
import fs from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { open } from '../../engine/index.js'
import { crashCopy, segmentFiles, tempDir } from './helpers.js'

const KEYS = 3000
const pad = 'y'.repeat(100)
const before = (i: number) => `before${i}:${pad}`
const during = (i: number) => `during${i}:`

t.test(
  'versions a pass copied forward are kept when the writes that superseded them replay first',
  async (t) => {
    const dir = tempDir(t, 'history-late')
    // Small segments; no checkpoint and no pass of its own, so an open replays the whole log,
    // in segment order, and the one pass is the test's.
    const db = await open(dir, {
      segmentBytes: 4096,
      checkpointBytes: 1 << 30,
      compactionMinDeadBytes: 1 << 30,
    })
    await db.createNamespace('h')
    db.setHistory('h', { seconds: 86_400, bytes: 1 << 26 })
    const put = (i: number) => ({ type: 'put' as const, ns: 'h', key: `k${i}`, value: before(i) })
    await db.batch(Array.from({ length: KEYS }, (_, i) => put(i)))
    const win = path.join(dir, fs.readdirSync(dir).find((f) => f.endsWith('.win'))!)

    // A pass copies the keys forward into segments above the one it started for new writes,
    // while keys it has copied are written again, into that one: below their copies.
    let passed = false
    const pass = db.compact().then(() => {
      passed = true
    })
    /** The writes made during the pass, with the window's size before each. */
    const written: { key: number; version: number; windowBefore: number }[] = []
    for (let i = KEYS - 1; i >= 0 && !passed; i--) {
      const windowBefore = fs.statSync(win).size
      const { version } = await db.put('h', `k${i}`, during(i))
      written.push({ key: i, version, windowBefore })
    }
    await pass
    t.ok(written.length > 0, `${written.length} writes made during the pass`)

    // Those the walk had passed lie in a segment below a copy of the version they superseded
    // (the rest came before the walk met their keys, or once the pass had moved the log on).
    const segments = segmentFiles(dir).map((f) => fs.readFileSync(f))
    const isBelow = written.map(({ key }) => below(segments, during(key), before(key)))
    const first = isBelow.indexOf(true)
    t.ok(first >= 0, 'writes lie below the copies of what they superseded')
    const lost = written.slice(first)
    const late = isBelow.slice(first).filter(Boolean).length
    t.ok(late >= 10, `${late} of the ${lost.length} writes from there on`)

    // The process dies, and the window lacks the records of the writes from the first of them
    // on: as a kill between a write's sync and its apply leaves it for that write (here for
    // all of them at once, which recovery settles by the same rule).
    const copy = tempDir(t, 'history-late-copy')
    crashCopy(dir, copy)
    fs.truncateSync(path.join(copy, path.basename(win)), lost[0]!.windowBefore)
    await db.close()

    const again = await open(copy)
    t.teardown(() => again.close())
    let bad = 0
    for (const { key, version } of lost) {
      const k = `k${key}`
      const got = {
        now: again.getNow('h', k)?.value,
        earlier: again.getAt('h', k, { version: version - 1 })?.value,
        versions: again.history('h', k).map((h) => h.value),
      }
      const want = { now: during(key), earlier: before(key), versions: [during(key), before(key)] }
      if (JSON.stringify(got) !== JSON.stringify(want) && bad++ < 5)
        t.fail(`${k}, written at ${version}`, { got, want })
    }
    t.equal(bad, 0, 'every key those writes wrote reads as it was before them, and after')
  },
)

/** Whether the segment holding `now` comes, in segment order, before one holding `was`. */
function below(segments: Buffer[], now: string, was: string): boolean {
  const at = segments.findIndex((b) => b.includes(now))
  return at >= 0 && segments.some((b, i) => i > at && b.includes(was))
}
