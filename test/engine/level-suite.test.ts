// abstract-level's own test suite, its assertions untouched, against CairnLevel on real
// directories (and again on a sublevel, as the suite itself does).
import fs from 'node:fs'
import { createRequire } from 'node:module'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { CairnLevel } from '../../engine/level/index.js'
import { tapeOn } from '../helpers/tape-on-tap.js'

const suite = createRequire(import.meta.url)('abstract-level/test') as (options: {
  test: unknown
  factory: (options?: object) => unknown
}) => void

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-level-suite-'))
t.teardown(() => fs.rmSync(root, { recursive: true, force: true }))
let made = 0

suite({
  test: tapeOn(t),
  // A directory not yet made: the suite opens with createIfMissing false and expects "does not exist".
  factory: (options) => new CairnLevel(path.join(root, `db-${++made}`), options),
})
