// Injected disk faults: the engine's file-I/O module fails the Nth open, write, fsync or rename
// with the errno a real disk gives. For every write kind: a write that failed is never
// visible, every acknowledged write survives a reopen, and the engine takes writes again
// by itself once the fault clears. Nothing but the I/O calls is faked.
import fs from 'node:fs'
import path from 'node:path'
import t, { type Test } from 'tap'
import { open } from '../../engine/index.js'
import { type IoOp, clearFaults, injectFault } from '../../engine/io.js'
import type { Db } from '../../engine/index.js'
import { writeNamespaces } from '../../engine/namespaces-file.js'
import { crashCopy, errorCode, sleep, tempDir } from './helpers.js'

const OPTIONS = { segmentBytes: 4 * 1024, autoCompact: false }

/** Every acknowledged key and its value (null once deleted). */
type Model = Map<string, unknown>

interface Kind {
  name: string
  /** One write of this kind; resolves with the keys it changed, as the model should see them. */
  run(db: Db, i: number): Promise<[string, unknown][]>
  /** The keys the write would change if it succeeded (to prove a failed one invisible). */
  touches(i: number): string[]
}

const KINDS: Kind[] = [
  {
    name: 'put',
    run: async (db, i) => {
      await db.put('f', `p${i}`, { i, pad: 'x'.repeat(300) })
      return [[`p${i}`, { i, pad: 'x'.repeat(300) }]]
    },
    touches: (i) => [`p${i}`],
  },
  {
    name: 'delete',
    run: async (db, i) => {
      await db.delete('f', `seed${i % 20}`)
      return [[`seed${i % 20}`, null]]
    },
    touches: (i) => [`seed${i % 20}`],
  },
  {
    name: 'batch',
    run: async (db, i) => {
      await db.batch([
        { type: 'put', ns: 'f', key: `b${i}a`, value: i },
        { type: 'put', ns: 'f', key: `b${i}b`, value: 'y'.repeat(400) },
      ])
      return [
        [`b${i}a`, i],
        [`b${i}b`, 'y'.repeat(400)],
      ]
    },
    touches: (i) => [`b${i}a`, `b${i}b`],
  },
  {
    name: 'increment',
    run: async (db) => {
      const n = await db.increment('f', 'counter', 1)
      return [['counter', n]]
    },
    touches: () => [],
  },
]

async function seed(db: Db, model: Model): Promise<void> {
  await db.createNamespace('f')
  for (let i = 0; i < 20; i++) {
    await db.put('f', `seed${i}`, `seed value ${i}`)
    model.set(`seed${i}`, `seed value ${i}`)
  }
}

async function check(t: Test, db: Db, model: Model, label: string): Promise<void> {
  const bad: string[] = []
  for (const [key, value] of model) {
    const got = await db.get('f', key)
    if (value === null ? got !== undefined : JSON.stringify(got?.value) !== JSON.stringify(value))
      bad.push(`${key}: ${JSON.stringify(got?.value)?.slice(0, 40)}`)
  }
  t.same(bad, [], `${label}: every acknowledged write is there`)
}

/** A failed disk heals by a retry in the background; a full one on the next write that fits. */
/** A closed directory whose namespace `users` holds u1 = 1. */
async function usersDir(t: Test, name: string): Promise<string> {
  const dir = tempDir(t, name)
  const db = await open(dir, OPTIONS)
  await db.createNamespace('users')
  await db.put('users', 'u1', 1)
  await db.close()
  return dir
}

async function healed(db: Db): Promise<boolean> {
  for (let i = 0; i < 100; i++) {
    if (db.health().state !== 'failed') return true
    await sleep(100)
  }
  return false
}

// Which calls a write makes: writes and fsyncs always; opens when it starts a segment.
const FAULTS: { op: IoOp; codes: string[] }[] = [
  { op: 'write', codes: ['ENOSPC', 'EIO', 'EROFS'] },
  { op: 'fsync', codes: ['EIO', 'ENOSPC'] },
  { op: 'open', codes: ['EMFILE', 'ENOSPC', 'EROFS'] },
]

for (const kind of KINDS) {
  for (const { op, codes } of FAULTS) {
    for (const code of codes) {
      t.test(`${kind.name}: ${op} fails with ${code}`, async (t) => {
        const dir = tempDir(t, 'faults')
        t.teardown(clearFaults)
        const model: Model = new Map()
        let db = await open(dir, OPTIONS)
        await seed(db, model)
        model.set('counter', null)
        // Leave the active segment nearly full, so the next writes start a new one (an open).
        const room =
          OPTIONS.segmentBytes - (db as unknown as { active: { end: number } }).active.end
        if (room > 300) {
          await db.put('f', 'pad', 'z'.repeat(room - 250))
          model.set('pad', 'z'.repeat(room - 250))
        }
        // Fail every call of this kind from now on, until cleared: a disk that stays bad.
        injectFault({ op, code, times: Number.POSITIVE_INFINITY })
        const failed: string[] = []
        let refusals = 0
        for (let i = 0; i < 20; i++) {
          const before = kind.name === 'increment' ? (await db.get('f', 'counter'))?.value : 0
          try {
            for (const [k, v] of await kind.run(db, i)) model.set(k, v)
          } catch (err) {
            refusals++
            const c = (err as { code?: string }).code
            const want = code === 'ENOSPC' && op !== 'fsync' ? 'NO_SPACE' : 'IO_ERROR'
            if (c !== want && !(want === 'NO_SPACE' && c === 'IO_ERROR'))
              t.fail(`refused with ${c}, expected ${want}: ${(err as Error).message}`)
            failed.push(...kind.touches(i))
            if (kind.name === 'increment') {
              const after = (await db.get('f', 'counter'))?.value
              t.same(after, before, 'a failed increment changes nothing')
            }
          }
        }
        // Opens happen only when a segment starts: a small segment makes them happen.
        t.ok(refusals > 0, `the fault was met (${refusals} of 20 refused)`)
        const state = db.health().state
        t.not(state, 'ok', `health names the fault (${state})`)
        if (state !== 'ok') t.type((db.health() as { reason: string }).reason, 'string')
        const listed = new Set((await db.list('f', { limit: 10_000 })).keys)
        for (const k of failed) {
          if (model.has(k)) continue
          t.equal(await db.get('f', k), undefined, `failed write to ${k} is not visible`)
          t.notOk(listed.has(k), `failed write to ${k} is not listed`)
        }
        await check(t, db, model, 'during the fault')

        clearFaults()
        t.ok(await healed(db), 'storage heals by itself once the fault clears')
        await db.put('f', 'probe', 'after')
        model.set('probe', 'after')
        for (const [k, v] of await kind.run(db, 100)) model.set(k, v)
        t.pass('writes work again without a reopen')
        t.equal(db.health().state, 'ok', 'and health says so')
        await check(t, db, model, 'after healing')
        await db.close()
        db = await open(dir, OPTIONS)
        await check(t, db, model, 'after reopen')
        for (const k of failed)
          if (!model.has(k)) t.equal(await db.get('f', k), undefined, `${k} still absent`)
        await db.close()
      })
    }
  }
}

t.test('a fault while sealing (hint or manifest) fails no write', async (t) => {
  for (const op of ['write', 'rename'] as const) {
    const dir = tempDir(t, 'faults-hint')
    t.teardown(clearFaults)
    const model: Model = new Map()
    let db = await open(dir, OPTIONS)
    await seed(db, model)
    injectFault({ op, code: 'EIO', path: /\.hint|MANIFEST/, times: Number.POSITIVE_INFINITY })
    for (let i = 0; i < 40; i++) for (const [k, v] of await KINDS[0]!.run(db, i)) model.set(k, v)
    t.ok(db.stats().segments > 3, `${op}: several segments sealed meanwhile`)
    clearFaults()
    await db.close()
    db = await open(dir, OPTIONS)
    await check(t, db, model, `${op} of hints failed`)
    await db.close()
  }
})

t.test('a fault during compaction leaves every key readable and nothing lost', async (t) => {
  for (const { op, code } of [
    { op: 'write', code: 'ENOSPC' },
    { op: 'fsync', code: 'EIO' },
    { op: 'rename', code: 'EROFS' },
    { op: 'open', code: 'EMFILE' },
  ] as const) {
    const dir = tempDir(t, 'faults-compact')
    t.teardown(clearFaults)
    const model: Model = new Map()
    let db = await open(dir, OPTIONS)
    await seed(db, model)
    for (let round = 0; round < 3; round++)
      for (let i = 0; i < 30; i++) for (const [k, v] of await KINDS[0]!.run(db, i)) model.set(k, v)
    injectFault({ op, code, path: /compact|\.hint|seg-|MANIFEST|COMPACTED/, nth: 2, times: 1 })
    const res = await errorCode(db.compact())
    t.comment(`${op} ${code}: compact ${res}`)
    if (res !== 'RESOLVED')
      t.match(res, /^(IO_ERROR|NO_SPACE)$/, `${op} ${code}: an engine error, not a bare errno`)
    await check(t, db, model, `${op} ${code}: after the failed compaction`)
    clearFaults()
    t.ok(await healed(db), `${op} ${code}: healthy again`)
    for (const [k, v] of await KINDS[0]!.run(db, 99)) model.set(k, v)
    await db.compact()
    await check(t, db, model, `${op} ${code}: after a compaction that worked`)
    await db.close()
    db = await open(dir, OPTIONS)
    await check(t, db, model, `${op} ${code}: after reopen`)
    await db.close()
  }
})

t.test('close works while storage is failing, and lets go of the directory', async (t) => {
  const dir = tempDir(t, 'faults-close')
  t.teardown(clearFaults)
  const db = await open(dir, OPTIONS)
  await db.createNamespace('f')
  await db.put('f', 'kept', 1)
  injectFault({ op: 'fsync', code: 'EIO', times: Number.POSITIVE_INFINITY })
  t.equal(await errorCode(db.put('f', 'lost', 2)), 'IO_ERROR')
  t.equal(await errorCode(db.put('f', 'lost2', 2)), 'IO_ERROR', 'refused at once while failed')
  await db.close()
  clearFaults()
  const again = await open(dir, OPTIONS)
  t.equal((await again.get('f', 'kept'))?.value, 1)
  t.equal(await again.get('f', 'lost'), undefined)
  await again.close()
})

t.test(
  'a disk that fails at open: NO_SPACE or IO_ERROR, and everything there once it works',
  async (t) => {
    const dir = tempDir(t, 'faults-open')
    t.teardown(clearFaults)
    const db = await open(dir, OPTIONS)
    await db.createNamespace('o')
    await db.put('o', 'kept', 1)
    await db.close()
    for (const [op, code, expected] of [
      ['write', 'ENOSPC', 'NO_SPACE'],
      ['fsync', 'EIO', 'IO_ERROR'],
    ] as const) {
      injectFault({ op, code, times: Number.POSITIVE_INFINITY })
      t.equal(await errorCode(open(dir, OPTIONS)), expected, `${op} ${code} at open`)
      clearFaults()
      const again = await open(dir, OPTIONS)
      t.equal((await again.get('o', 'kept'))?.value, 1, `${op} ${code}: the data is there after`)
      await again.close()
    }
  },
)

t.test('a create or drop the caller is told failed is not there at the next open', async (t) => {
  t.teardown(clearFaults)
  // Each step of the namespace table's write, failing in turn: the copy, NAMESPACES itself,
  // its rename, and the directory's fsync after that rename.
  const steps: [string, () => void][] = [
    ['the copy', () => injectFault({ op: 'open', code: 'EIO', path: /NAMESPACES\.copy\.tmp$/ })],
    ['NAMESPACES', () => injectFault({ op: 'open', code: 'EIO', path: /NAMESPACES\.tmp$/ })],
    ['the rename', () => injectFault({ op: 'rename', code: 'EIO', path: /NAMESPACES$/ })],
    [
      "the directory's fsync",
      () => injectFault({ op: 'fsync', code: 'EIO', path: /faults-ns-[^/]*$/ }),
    ],
  ]
  for (const [step, arm] of steps) {
    const dir = tempDir(t, 'faults-ns')
    const db = await open(dir, OPTIONS)
    await db.createNamespace('stays')
    await db.put('stays', 'k', 1)
    arm()
    t.equal(await errorCode(db.createNamespace('refused')), 'IO_ERROR', `${step}: the create fails`)
    clearFaults()
    t.equal(db.hasNamespace('refused'), false, `${step}: not there now`)
    t.ok(await healed(db), `${step}: healthy again, so the drop below meets the fault itself`)
    arm()
    t.equal(await errorCode(db.dropNamespace('stays')), 'IO_ERROR', `${step}: the drop fails`)
    clearFaults()
    t.equal(db.hasNamespace('stays'), true, `${step}: still there now`)
    await db.close()
    const again = await open(dir, OPTIONS)
    t.equal(again.hasNamespace('refused'), false, `${step}: the failed create is not there after`)
    t.equal((await again.get('stays', 'k'))?.value, 1, `${step}: the failed drop took nothing`)
    await again.close()
  }
})

t.test(
  'a drop the disk can neither make nor undo stops writes until the table is right',
  async (t) => {
    t.teardown(clearFaults)
    for (const code of ['EIO', 'ENOSPC']) {
      const dir = tempDir(t, 'faults-ns-undo')
      const db = await open(dir, OPTIONS)
      await db.createNamespace('orders')
      await db.put('orders', 'o1', 1)
      // The drop's rename goes through, the directory's fsync fails, and so does putting the
      // table back: NAMESPACES no longer lists the namespace the caller still has.
      injectFault({ op: 'fsync', code, path: /faults-ns-undo-[^/]*$/ })
      injectFault({ op: 'rename', code, path: /NAMESPACES$/, nth: 2 })
      t.equal(await errorCode(db.dropNamespace('orders')), 'IO_ERROR', `${code}: the drop fails`)
      clearFaults()
      t.equal(db.hasNamespace('orders'), true, `${code}: the namespace is still there`)
      t.equal(db.health().state, 'failed', `${code}: writes are refused, not just until one fits`)
      t.ok(await healed(db), `${code}: the retry puts the table right`)
      await db.put('orders', 'o2', 2)
      await db.close()
      const again = await open(dir, OPTIONS)
      t.same(
        [(await again.get('orders', 'o1'))?.value, (await again.get('orders', 'o2'))?.value],
        [1, 2],
        `${code}: after a reopen, the namespace and the write acknowledged after the failure`,
      )
      await again.close()
    }
  },
)

t.test(
  'writes in flight when a drop can neither be made nor undone are not acknowledged',
  async (t) => {
    t.teardown(clearFaults)
    for (const full of [false, true]) {
      const label = full ? 'the disk also full' : 'EIO'
      const dir = tempDir(t, 'faults-ns-flight')
      const db = await open(dir, OPTIONS)
      await db.createNamespace('orders')
      await db.put('orders', 'o1', 1)
      const inFlight = db.put('orders', 'o2', 2) // staged before the drop
      injectFault({ op: 'fsync', code: 'EIO', path: /faults-ns-flight-[^/]*$/ })
      injectFault({ op: 'rename', code: 'EIO', path: /NAMESPACES$/, nth: 2 })
      if (full) injectFault({ op: 'write', code: 'ENOSPC', path: /seg-\d+\.seg$/ })
      t.equal(await errorCode(db.dropNamespace('orders')), 'IO_ERROR', `${label}: the drop fails`)
      t.equal(await errorCode(inFlight), 'IO_ERROR', `${label}: the write in flight fails with it`)
      clearFaults()
      t.equal(
        db.health().state,
        'failed',
        `${label}: and writes wait for the retry, full disk or not`,
      )
      t.equal(await errorCode(db.put('orders', 'o3', 3)), 'IO_ERROR', `${label}: a write now fails`)
      // A crash now, before the retry has put the table right: nothing acknowledged is lost.
      const image = tempDir(t, 'faults-ns-flight-image')
      crashCopy(dir, image)
      await db.close()
      const again = await open(image, OPTIONS)
      t.equal(again.hasNamespace('orders'), false, `${label}: the disk kept the drop`)
      await again.close()
    }
  },
)

t.test(
  "a process that lost the lock leaves the new holder's NAMESPACES alone at close",
  async (t) => {
    t.teardown(clearFaults)
    const dir = tempDir(t, 'faults-ns-lost')
    const db = await open(dir, OPTIONS)
    await db.createNamespace('orders')
    injectFault({ op: 'fsync', code: 'EIO', path: /faults-ns-lost-[^/]*$/ })
    injectFault({ op: 'rename', code: 'EIO', path: /NAMESPACES$/, nth: 2 })
    t.equal(await errorCode(db.dropNamespace('orders')), 'IO_ERROR')
    clearFaults()
    // Another process takes the directory over before the retry, and writes its own table.
    ;(db as unknown as { log: { loseLock(r: string): void } }).log.loseLock('taken over')
    writeNamespaces(dir, { nextId: 3, list: [[2, 'users']] })
    await db.close()
    const table = fs.readFileSync(path.join(dir, 'NAMESPACES'), 'utf8')
    t.match(table, /"users"/, "the new holder's table stands")
    t.notMatch(table, /"orders"/)
  },
)

t.test(
  'a NAMESPACES.copy the disk fails to read beside a good NAMESPACES: the open goes on',
  async (t) => {
    t.teardown(clearFaults)
    const dir = await usersDir(t, 'faults-ns-copy')
    injectFault({ op: 'read', code: 'EIO', path: /NAMESPACES\.copy$/, times: 5 })
    const again = await open(dir, OPTIONS)
    clearFaults()
    t.equal((await again.get('users', 'u1'))?.value, 1, 'every namespace, from NAMESPACES')
    await again.close()
  },
)

t.test('NAMESPACES the disk fails to read fails the open, and hides nothing', async (t) => {
  t.teardown(clearFaults)
  const dir = await usersDir(t, 'faults-ns-read')
  injectFault({ op: 'read', code: 'EIO', path: /NAMESPACES$/ })
  t.equal(await errorCode(open(dir, OPTIONS)), 'IO_ERROR', 'the open fails')
  clearFaults()
  const again = await open(dir, OPTIONS)
  t.equal((await again.get('users', 'u1'))?.value, 1, 'the next open has every namespace')
  await again.close()
})

t.test('a write that failed gives its version back: no gap, now or after a reopen', async (t) => {
  t.teardown(clearFaults)
  const dir = tempDir(t, 'faults-version')
  const db = await open(dir, OPTIONS)
  await db.createNamespace('v')
  for (let i = 0; i < 3; i++) await db.put('v', `k${i}`, i)
  injectFault({ op: 'fsync', code: 'EIO' })
  const failed = await Promise.all(
    [db.put('v', 'ghost', 1), db.put('v', 'ghost2', 2)].map(errorCode),
  )
  t.same(failed, ['IO_ERROR', 'IO_ERROR'], 'two writes in the failing group')
  clearFaults()
  t.ok(await healed(db))
  const next = await db.put('v', 'after', 4)
  t.equal(next.version, 4, 'the next write takes the first version that failed')
  await db.close()
  const again = await open(dir, OPTIONS)
  t.equal(again.namespaceVersion('v'), 4, 'and so it stays after a reopen')
  t.equal((await again.put('v', 'later', 5)).version, 5)
  await again.close()
})

t.test(
  'a conditional write decided against a write that then fails is not refused by it',
  async (t) => {
    t.teardown(clearFaults)
    const db = await open(tempDir(t, 'faults-staged'), OPTIONS)
    t.teardown(() => db.close())
    await db.createNamespace('s')
    await db.put('s', 'gone', 1)
    injectFault({ op: 'fsync', code: 'EIO' })
    // All in one group: the first two are staged when the others are checked against them.
    const codes = await Promise.all(
      [
        db.put('s', 'k', 'A'),
        db.delete('s', 'gone'),
        db.put('s', 'k', 'B', { ifVersion: null }),
        db.batch([{ type: 'put', ns: 's', key: 'kx', value: 1 }], {
          checks: [{ ns: 's', key: 'k', version: null }],
        }),
        db.delete('s', 'gone', { ifVersion: 2 }),
        db.batch([], { checks: [{ ns: 's', key: 'k', version: 2 }] }),
        db.batch([{ type: 'delete', ns: 's', key: 'gone' }]),
      ].map(errorCode),
    )
    t.same(
      codes,
      ['IO_ERROR', 'IO_ERROR', 'IO_ERROR', 'IO_ERROR', 'IO_ERROR', 'IO_ERROR', 'IO_ERROR'],
      'never a CONFLICT or "nothing there" from a write that did not happen',
    )
    clearFaults()
    t.ok(await healed(db))
    t.equal(await db.get('s', 'k'), undefined)
    t.equal((await db.get('s', 'gone'))?.value, 1)
    // With a disk that works, the same refusals stand, once what they rest on is durable.
    const again = await Promise.all(
      [db.put('s', 'k', 'A'), db.put('s', 'k', 'B', { ifVersion: null })].map(errorCode),
    )
    t.same(again, ['RESOLVED', 'CONFLICT'])
  },
)

t.test(
  'a compaction that took effect is not failed by the old files it could not delete',
  async (t) => {
    t.teardown(clearFaults)
    const dir = tempDir(t, 'faults-unlink')
    const model: Model = new Map()
    let db = await open(dir, OPTIONS)
    await seed(db, model)
    for (let round = 0; round < 3; round++)
      for (let i = 0; i < 30; i++) for (const [k, v] of await KINDS[0]!.run(db, i)) model.set(k, v)
    injectFault({ op: 'unlink', code: 'EIO', path: /seg-/, times: Number.POSITIVE_INFINITY })
    t.equal(await errorCode(db.compact()), 'RESOLVED', 'the pass is done; the old files wait')
    await check(t, db, model, 'after the compaction')
    await db.close()
    clearFaults()
    db = await open(dir, OPTIONS)
    await check(t, db, model, 'after reopen, which deletes them')
    t.notOk(fs.existsSync(path.join(dir, 'COMPACTED')), 'nothing is left to finish')
    await db.close()
  },
)
