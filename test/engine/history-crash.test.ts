// History survives kill -9: a real child writes to a namespace with a history window while
// compaction and checkpoints come and go, is killed at a random moment, and every version
// it was told of (and the one in flight, when the log kept it) reads back at its point.
import fs from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { open } from '../../engine/index.js'
import { repoRoot, rng, runChild, seedFromEnv, sleep, tempDir } from './helpers.js'

const writer = path.join(repoRoot, 'test/engine/child/history-writer.ts')

t.test(
  'every version reads back at its point after SIGKILL, compaction and checkpoints',
  async (t) => {
    const seed = seedFromEnv('CAIRN_SEED')
    t.comment(`seed ${seed} (CAIRN_SEED=${seed} to reproduce the kill schedule)`)
    const r = rng(seed)
    const dir = tempDir(t, 'history-crash')
    /** states[v]: the namespace after version v. */
    const states: Map<string, string>[] = [new Map()]
    let compacted = 0
    for (let run = 0; run < 6; run++) {
      const child = runChild(writer, [dir, String(Math.floor(r() * 2 ** 31))])
      await child.waitFor((l) => l.includes('"ready"'), 30_000)
      await sleep(150 + r() * 400)
      child.kill('SIGKILL')
      const exit = await child.exited
      t.equal(exit.signal, 'SIGKILL', `run ${run}: killed`)
      // One write at a time: each acknowledged version follows the one before, and at most
      // the last attempted write is unacknowledged.
      let pending: { a: string; key: string; value?: string } | undefined
      for (const line of child.lines) {
        const o = JSON.parse(line)
        if (o.compactions !== undefined) compacted = Math.max(compacted, o.compactions)
        if (o.a) pending = o
        else if (o.k !== undefined) {
          const next = new Map(states.at(-1)!)
          if (pending!.a === 'del') next.delete(pending!.key)
          else next.set(pending!.key, pending!.value!)
          t.equal(o.k, states.length, `run ${run}: versions follow one another`)
          states.push(next)
          pending = undefined
        }
      }
      const db = await open(dir)
      const version = db.namespaceVersion('h')
      if (version === states.length) {
        // The write in flight took a version: it reached the log when its effect is there (a
        // put's value is unique, and only a key present is deleted). Otherwise the version was
        // counted by a manifest written while it was staged, and is a gap: it reads as the
        // state before it (FORMAT.md, "Versions").
        const next = new Map(states.at(-1)!)
        const now = db.getNow('h', pending?.key ?? '')?.value
        if (pending?.a === 'del' && now === undefined) next.delete(pending.key)
        else if (pending?.a === 'put' && now === pending.value) next.set(pending.key, pending.value)
        states.push(next)
      }
      t.equal(version, states.length - 1, `run ${run}: the namespace's version is the last write's`)
      t.equal(db.historyFrom('h').version, 0, `run ${run}: the whole history is readable`)
      let bad = 0
      for (let v = 0; v < states.length; v++)
        for (let k = 0; k < 8; k++) {
          const key = `k${k}`
          const got = db.getAt('h', key, { version: v })?.value
          if (got !== states[v]!.get(key) && bad++ < 5)
            t.fail(`run ${run}: ${key} at ${v}`, { got, want: states[v]!.get(key) })
        }
      if (bad > 0 && process.env.CAIRN_HISTORY_DEBUG)
        fs.writeFileSync(`/tmp/hsmoke/crash-${run}.log`, child.lines.join('\n'))
      t.equal(bad, 0, `run ${run}: all ${states.length} versions read back at their point`)
      await db.close()
    }
    t.ok(states.length > 50, `${states.length - 1} versions written in all`)
    t.ok(compacted > 0, `the writer compacted as it wrote (${compacted} passes in one run)`)
  },
)
