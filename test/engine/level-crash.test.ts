// SIGKILL a real process writing through the Level API at random moments; after each kill
// CairnLevel reopens the directory, and every acknowledged write must be there, no batch
// torn, and the iterator must agree with get.
import path from 'node:path'
import t from 'tap'
import { CairnLevel } from '../../engine/level/index.js'
import { repoRoot, rng, runChild, seedFromEnv, sleep, tempDir } from './helpers.js'

const writer = path.join(repoRoot, 'test/engine/child/level-writer.ts')
const ITERATIONS = 20
const BUDGET_MS = 45_000

interface Attempt {
  a: 'put' | 'del' | 'batch'
  id: string
  key?: string
  keys?: string[]
  value?: string | null
}

t.test(
  'kill -9 during puts, deletes, batches and chained batches through CairnLevel',
  async (t) => {
    const seed = seedFromEnv('CAIRN_SEED')
    t.comment(`seed ${seed} (set CAIRN_SEED=${seed} to reproduce the kill schedule)`)
    const r = rng(seed)
    const dir = tempDir(t, 'level-crash')
    let state = new Map<string, string>()
    let done = 0
    let totalAcked = 0
    const started = Date.now()
    for (let run = 0; run < ITERATIONS && Date.now() - started < BUDGET_MS; run++) {
      const child = runChild(writer, [dir, String(run), String(Math.floor(r() * 2 ** 31))])
      try {
        await child.waitFor((l) => l.includes('"ready"'), 30_000)
      } catch (err) {
        child.kill()
        t.fail(`run ${run}: child did not start: ${(err as Error).message}`)
        break
      }
      await sleep(20 + r() * 280)
      child.kill('SIGKILL')
      const exit = await child.exited
      if (exit.signal !== 'SIGKILL') {
        t.fail(`run ${run}: child exited on its own (code ${exit.code})`, {
          stderr: child.stderr(),
        })
        break
      }
      const attempts: Attempt[] = []
      const acked = new Set<string>()
      for (const line of child.lines) {
        const msg = JSON.parse(line)
        if (msg.a) attempts.push(msg)
        else if (msg.k) acked.add(msg.k)
      }
      totalAcked += acked.size
      const byKey = new Map<string, Attempt[]>()
      for (const at of attempts)
        for (const key of at.keys ?? [at.key!]) {
          if (!byKey.has(key)) byKey.set(key, [])
          byKey.get(key)!.push(at)
        }

      const db = new CairnLevel<Buffer, string>(dir, { keyEncoding: 'buffer' })
      await db.open()
      const listed = new Map<string, string>()
      for (const [k, v] of await db.iterator().all()) listed.set(k.toString('hex'), v)
      const failures: string[] = []
      for (const key of new Set([...listed.keys(), ...state.keys(), ...byKey.keys()])) {
        const got = (await db.get(Buffer.from(key, 'hex'))) ?? null
        if (got !== (listed.get(key) ?? null))
          failures.push(
            `${key}: get says ${got?.slice(0, 20)}, the iterator ${listed.get(key)?.slice(0, 20)}`,
          )
        if (!state.has(key) && !byKey.has(key)) failures.push(`${key}: present but never written`)
        const ops = byKey.get(key) ?? []
        let last = -1
        for (let i = 0; i < ops.length; i++) if (acked.has(ops[i]!.id)) last = i
        if (ops.length - last > 2)
          failures.push(`${key}: ${ops.length - last - 1} writes in flight at once`)
        const effect = (o: Attempt) => (o.a === 'del' ? null : (o.value ?? null))
        const settled = last >= 0 ? effect(ops[last]!) : (state.get(key) ?? null)
        const candidates = [settled]
        if (last + 1 < ops.length) candidates.push(effect(ops[last + 1]!))
        if (!candidates.includes(got))
          failures.push(
            `${key}: ${JSON.stringify(got?.slice(0, 20))}, expected one of ${JSON.stringify(candidates.map((c) => c?.slice(0, 20) ?? null))}`,
          )
      }
      for (const at of attempts) {
        if (at.a !== 'batch') continue
        const values = at.keys!.map((k) => listed.get(k) ?? null)
        if (new Set(values).size !== 1)
          failures.push(`batch ${at.id}: torn ${JSON.stringify(values)}`)
      }
      await db.close()
      t.same(failures, [], `run ${run}: ${acked.size} acknowledged writes checked after SIGKILL`)
      if (failures.length) break
      state = listed
      done++
    }
    t.ok(done >= 5, `${done} kill-and-reopen rounds completed`)
    t.ok(totalAcked > 0, `${totalAcked} acknowledged writes in total`)
  },
)
