// Transactions on the embedded engine. The engine's index is in memory, so the state a
// transaction depends on is read synchronously, in one turn of the event loop: a consistent
// snapshot. Its writes then go to the engine as one batch, checked against that snapshot (every
// key the transaction read or wrote must still have the version it had), so the batch applies
// only if nothing changed in between, all or nothing, as one record. The batch is staged in the
// same turn, so nothing can come between; should a check still fail, the plan is made again.
import type { Db } from '../../engine/index.js'
import type { BatchCheck, BatchOp } from '../../engine/types.js'
import { metadataText, valueText, wrap } from './envelope.js'
import { addInteger, txError } from './tx.js'
import type { Transacted, TxOp, TxResult } from './types.js'

interface Current {
  stored: Buffer
  version: number
  expiresAt?: number
}

interface Plan {
  results: TxResult[]
  writes: BatchOp[]
  /** For each write, the result it fills in with its version. */
  owners: TxResult[]
  checks: BatchCheck[]
}

/** Plans beyond this mean a key is rewritten without pause: the caller gets CONFLICT. */
const MAX_ATTEMPTS = 200

export async function transact(db: Db, ns: string, ops: TxOp[]): Promise<Transacted> {
  // A transaction that writes is acknowledged only after every write staged before it, so it
  // may be planned on them (no waiting for them to be durable: a hot counter takes one
  // increment per write, not one per fsync); one that only reads must see acknowledged data.
  const writes = ops.some((op) => op.op !== 'get' && op.op !== 'check')
  // A plan made on staged writes that refuses (a check, a key not there) or writes nothing
  // (a delete that found nothing) is answered once those writes are durable, and fails with
  // them if they fail: a write that failed is seen by nothing.
  const settled = () =>
    writes
      ? db.settledFor(
          ns,
          ops.map((op) => op.key),
        )
      : Promise.resolve()
  for (let attempt = 0; ; attempt++) {
    let plan: Plan
    try {
      plan = planTx(db, ns, ops, writes)
    } catch (err) {
      await settled()
      throw err
    }
    if (plan.writes.length === 0) {
      await settled()
      return { version: db.namespaceVersion(ns), results: plan.results }
    }
    try {
      const done = await db.batch(plan.writes, { checks: plan.checks })
      // The writes took consecutive versions in order, the last being done.version.
      const n = plan.owners.length
      plan.owners.forEach((r, i) => {
        ;(r as { version: number }).version = done.version - (n - 1 - i)
      })
      return { version: done.version, results: plan.results }
    } catch (err) {
      if ((err as { code?: string }).code !== 'CONFLICT' || attempt >= MAX_ATTEMPTS) throw err
      // A write in flight touched one of the keys: plan again once it has settled.
      await new Promise((r) => setTimeout(r, Math.min(attempt, 5)))
    }
  }
}

function planTx(db: Db, ns: string, ops: TxOp[], writes: boolean): Plan {
  const seen = new Map<string, Current | undefined>()
  const read = (key: string): Current | undefined => {
    if (seen.has(key)) return seen.get(key)
    const got = (writes ? db.latestNow(ns, key) : db.getNow(ns, key)) as Current & {
      value: Buffer
    }
    const cur = got && { stored: got.value, version: got.version, expiresAt: got.expiresAt }
    seen.set(key, cur)
    return cur
  }
  const plan: Plan = { results: [], writes: [], owners: [], checks: [] }
  const write = (op: BatchOp, result: TxResult) => {
    plan.writes.push(op)
    plan.owners.push(result)
    plan.results.push(result)
  }
  ops.forEach((op, i) => {
    const cur = read(op.key)
    const conflict = (why: string) => txError('CONFLICT', i, `op ${i} (${op.op} ${op.key}): ${why}`)
    switch (op.op) {
      case 'check':
        if ((cur?.version ?? null) !== op.version) throw conflict('the version differs')
        plan.results.push({})
        return
      case 'get': {
        if (cur === undefined) {
          plan.results.push({ found: false })
          return
        }
        const r: TxResult = { found: true, value: valueText(cur.stored), version: cur.version }
        if (cur.expiresAt !== undefined) r.expiresAt = cur.expiresAt
        if (op.metadata) r.metadata = metadataText(cur.stored) ?? null
        plan.results.push(r)
        return
      }
      case 'put': {
        if (op.ifVersion !== undefined && (cur?.version ?? null) !== op.ifVersion)
          throw conflict(op.ifVersion === null ? 'the key exists' : 'the version differs')
        const w: BatchOp = { type: 'put', ns, key: op.key, value: wrap(op.value, op.metadata) }
        if (op.ttlMs !== undefined) w.ttlMs = op.ttlMs
        if (op.expiresAt !== undefined) w.expiresAt = op.expiresAt
        write(w, { created: cur === undefined, version: 0 })
        return
      }
      case 'delete':
        if (op.ifVersion !== undefined && cur?.version !== op.ifVersion)
          throw conflict('the version differs')
        if (cur === undefined) plan.results.push({ deleted: false })
        else write({ type: 'delete', ns, key: op.key }, { deleted: true })
        return
      case 'increment':
      case 'patch': {
        if (op.op === 'patch' && op.ifVersion !== undefined && cur?.version !== op.ifVersion)
          throw conflict('the version differs')
        const by = op.by
        if (cur === undefined && by === undefined)
          throw txError('KEY_NOT_FOUND', i, `op ${i} (${op.op} ${op.key}): no such key`)
        let value = cur && valueText(cur.stored)
        let next: bigint | undefined
        if (by !== undefined) {
          next = addInteger(value?.toString('latin1'), by)
          if (next === undefined)
            throw txError('NOT_A_NUMBER', i, `op ${i}: the value of ${op.key} is not an integer`)
          value = Buffer.from(next.toString(), 'latin1')
          if (op.maxBytes !== undefined && value.length > op.maxBytes)
            throw txError(
              'VALUE_TOO_LARGE',
              i,
              `op ${i}: ${op.key} would pass ${op.maxBytes} bytes`,
            )
        }
        let metadata = cur && metadataText(cur.stored)
        let expiresAt = cur?.expiresAt
        let ttlMs: number | undefined
        if (op.op === 'patch') {
          if (op.metadata !== undefined) metadata = op.metadata ?? undefined
          if (op.persist) expiresAt = undefined
          if (op.expiresAt !== undefined) expiresAt = op.expiresAt
          if (op.ttlMs !== undefined) {
            ttlMs = op.ttlMs
            expiresAt = undefined
          }
        }
        const w: BatchOp = { type: 'put', ns, key: op.key, value: wrap(value!, metadata) }
        if (ttlMs !== undefined) w.ttlMs = ttlMs
        if (expiresAt !== undefined) w.expiresAt = expiresAt
        const r: TxResult =
          op.op === 'increment'
            ? { value: next!, version: 0 }
            : next === undefined
              ? { version: 0, created: false }
              : { value: next, version: 0, created: cur === undefined }
        write(w, r)
        return
      }
    }
  })
  // The batch applies only if every key still has the version this plan saw.
  for (const [key, cur] of seen) plan.checks.push({ ns, key, version: cur?.version ?? null })
  return plan
}
