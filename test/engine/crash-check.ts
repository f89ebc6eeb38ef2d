// Drives crash iterations: a real child writes and reports, gets SIGKILLed at a random
// moment, and the parent reopens the directory to check every acknowledged write.
import path from 'node:path'
import type { Test } from 'tap'
import { open } from '../../engine/index.js'
import type { OpenOptions } from '../../engine/types.js'
import { repoRoot, rng, runChild, seedFromEnv, sleep, tempDir } from './helpers.js'

const writer = path.join(repoRoot, 'test/engine/child/writer.ts')

interface Attempt {
  a: 'put' | 'del' | 'batch' | 'inc'
  id: string
  key?: string
  keys?: string[]
  value?: string | null
}

export interface CrashConfig {
  mode: 'writes' | 'compact' | 'checkpoint'
  iterations: number
  budgetMs: number
  options: OpenOptions
}

export async function crashIterations(t: Test, cfg: CrashConfig) {
  const seed = seedFromEnv('CAIRN_SEED')
  t.comment(`${cfg.mode}: seed ${seed} (set CAIRN_SEED=${seed} to reproduce the kill schedule)`)
  const r = rng(seed)
  const dir = tempDir(t, `crash-${cfg.mode}`)
  const state = new Map<string, unknown>() // verified contents after the last reopen
  let maxAcked = 0
  let counter = 0
  let done = 0
  let totalAcked = 0
  let fromCheckpoint = 0
  const started = Date.now()
  for (let run = 0; run < cfg.iterations && Date.now() - started < cfg.budgetMs; run++) {
    const child = runChild(writer, [dir, cfg.mode, String(run), String(Math.floor(r() * 2 ** 31))])
    const duringOpen = r() < 0.15
    try {
      await child.waitFor((l) => l.includes(duringOpen ? '"start"' : '"ready"'), 30_000)
    } catch (err) {
      child.kill()
      t.fail(`run ${run}: child did not start: ${(err as Error).message}`)
      break
    }
    await sleep(duringOpen ? r() * 40 : 20 + r() * 280)
    child.kill('SIGKILL')
    const exit = await child.exited
    if (exit.signal !== 'SIGKILL') {
      t.fail(`run ${run}: child exited on its own (code ${exit.code}) before the kill`, {
        stderr: child.stderr(),
      })
      break
    }

    const attempts: Attempt[] = []
    const acks = new Map<string, { ver?: number; n?: number }>()
    for (const line of child.lines) {
      const msg = JSON.parse(line)
      if (msg.a) attempts.push(msg)
      else if (msg.k) acks.set(msg.k, msg)
    }
    totalAcked += acks.size

    // Per key: what the value must be now. The acknowledged prefix is settled; the one
    // write after it (if any) was in flight and may or may not have landed.
    const byKey = new Map<string, Attempt[]>()
    for (const at of attempts) {
      for (const key of at.keys ?? (at.key ? [at.key] : [])) {
        if (!byKey.has(key)) byKey.set(key, [])
        byKey.get(key)!.push(at)
      }
    }
    const db = await open(dir, cfg.options)
    if ((db as unknown as { openedFrom: string }).openedFrom === 'checkpoint') fromCheckpoint++
    const failures: string[] = []
    const actual = new Map<string, { value: unknown; version: number }>()
    // A first child killed while opening may not have created the namespace yet; then it
    // must not have acknowledged anything either.
    if (!db.hasNamespace('c')) {
      if (acks.size > 0)
        failures.push(`namespace c is missing after ${acks.size} acknowledged writes`)
      await db.createNamespace('c')
    }
    const listed = (await db.list('c', { limit: 100_000 })).keys
    for (const key of new Set([...listed, ...state.keys(), ...byKey.keys()])) {
      const got = await db.get('c', key)
      if (got) actual.set(key, got)
    }
    for (const key of listed) {
      if (key === 'n' || key === 'probe') continue
      if (!state.has(key) && !byKey.has(key)) failures.push(`${key}: present but never written`)
      if (!actual.has(key)) failures.push(`${key}: listed but get finds nothing`)
    }
    if (!byKey.has('n') && ((actual.get('n')?.value as number | undefined) ?? 0) !== counter)
      failures.push(
        `n: counter changed without increments: ${actual.get('n')?.value}, expected ${counter}`,
      )
    for (const [key, ops] of byKey) {
      const got = actual.get(key)
      if (key === 'n') {
        const ackedIncs = ops.filter((o) => acks.has(o.id))
        const now = (got?.value as number | undefined) ?? 0
        const lo = counter + ackedIncs.length
        const hi = lo + (ops.length > ackedIncs.length ? 1 : 0)
        if (now < lo || now > hi)
          failures.push(
            `n: counter ${now}, expected ${lo}..${hi} (acked increments ${ackedIncs.length})`,
          )
        const lastN = ackedIncs.length ? acks.get(ackedIncs[ackedIncs.length - 1].id)!.n : undefined
        if (lastN !== undefined && lastN !== lo)
          failures.push(`n: last acknowledged increment returned ${lastN}, expected ${lo}`)
        continue
      }
      let lastAck = -1
      for (let i = 0; i < ops.length; i++) if (acks.has(ops[i].id)) lastAck = i
      if (ops.length - lastAck > 2)
        failures.push(`${key}: harness saw ${ops.length - lastAck - 1} writes in flight`)
      const effect = (o: Attempt) => (o.a === 'del' ? null : (o.value ?? null))
      const settled = lastAck >= 0 ? effect(ops[lastAck]) : (state.get(key) ?? null)
      const candidates = [settled]
      if (lastAck + 1 < ops.length) candidates.push(effect(ops[lastAck + 1]))
      const now = got ? got.value : null
      if (!candidates.includes(now as string | null)) {
        failures.push(
          `${key}: value ${JSON.stringify(now)?.slice(0, 40)}, expected one of ${JSON.stringify(candidates.map((c) => (c === null ? c : String(c).slice(0, 40))))}` +
            (lastAck >= 0 ? ` (last acknowledged write ${ops[lastAck].a} ${ops[lastAck].id})` : ''),
        )
      } else if (lastAck >= 0 && now !== null && now === settled) {
        const op = ops[lastAck]
        let ver = acks.get(op.id)!.ver
        // A batch's writes take consecutive versions in op order; it answers the last.
        if (ver !== undefined && op.a === 'batch')
          ver -= op.keys!.length - 1 - op.keys!.indexOf(key)
        if (ver !== undefined && got!.version !== ver)
          failures.push(`${key}: version ${got!.version}, acknowledged ${ver}`)
      }
    }
    // A batch is all or nothing: its five keys hold the same marker or are all absent.
    for (const at of attempts) {
      if (at.a !== 'batch') continue
      const values = at.keys!.map((k) => actual.get(k)?.value ?? null)
      if (new Set(values).size !== 1)
        failures.push(`batch keys ${at.keys![0]}..: torn batch ${JSON.stringify(values)}`)
    }
    for (const ack of acks.values())
      if (ack.ver !== undefined) maxAcked = Math.max(maxAcked, ack.ver)
    const probe = await db.put('c', 'probe', run)
    if (!(probe.version > maxAcked))
      failures.push(`version after reopen ${probe.version} not above acknowledged ${maxAcked}`)
    maxAcked = probe.version
    await db.close()

    t.same(
      failures,
      [],
      `run ${run}: ${acks.size} acknowledged writes checked after SIGKILL${duringOpen ? ' during open' : ''}`,
    )
    if (failures.length) break
    state.clear()
    for (const [k, v] of actual) if (k !== 'n' && k !== 'probe') state.set(k, v.value)
    counter = (actual.get('n')?.value as number | undefined) ?? 0
    done++
  }
  t.ok(done >= Math.min(5, cfg.iterations), `${done} kill-and-reopen rounds completed`)
  t.ok(totalAcked > 0, `${totalAcked} acknowledged writes in total`)
  t.comment(`${fromCheckpoint} of ${done} reopens used a checkpoint`)
  return { rounds: done, fromCheckpoint }
}
