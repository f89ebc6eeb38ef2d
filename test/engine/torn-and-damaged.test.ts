// Telling a torn write from damage at open and in repair: a torn write (a crash or power
// failure during a write nobody was told had succeeded) is cut off silently, damage to
// acknowledged data is named (CORRUPT) and repair keeps every intact record around it.
import fs from 'node:fs'
import path from 'node:path'
import { crc32 } from 'node:zlib'
import t, { type Test } from 'tap'
import { open, repair } from '../../engine/index.js'
import { io } from '../../engine/io.js'
import { crashCopy, errorCode, segmentFiles, sleep, tempDir } from './helpers.js'

/** [start, end) of each record of a segment, up to the first that cannot be one. */
function records(file: string): [number, number][] {
  const b = fs.readFileSync(file)
  const out: [number, number][] = []
  let p = 32
  while (p + 12 <= b.length) {
    const len = b.readUInt32LE(p + 4)
    if (len === 0 || b.readUInt32LE(p + 8) === 0 || p + 12 + len > b.length) break
    out.push([p, p + 12 + len])
    p += 12 + len
  }
  return out
}

function manifestOf(dir: string): { active: number; sealed: { id: number }[] } {
  const text = fs.readFileSync(path.join(dir, 'MANIFEST'), 'utf8')
  return JSON.parse(text.slice(text.indexOf('\n') + 1))
}

function writeManifestFile(dir: string, m: unknown): void {
  const body = JSON.stringify(m)
  fs.writeFileSync(path.join(dir, 'MANIFEST'), `${crc32(body)}\n${body}`)
}

/** A value of raw bytes that is mostly zeros (sparse binary data). */
function sparse(i: number): Buffer {
  const b = Buffer.alloc(3000)
  b[0] = 1
  b.writeUInt32LE(i, 1)
  b[2999] = 7
  return b
}
const key = (i: number) => `k${String(i).padStart(3, '0')}`

/** Flips one bit of the key of record `n` of `file`. */
function flipKeyOf(file: string, n: number): void {
  const b = fs.readFileSync(file)
  const [at] = records(file)[n]!
  b[at + 12 + 32]! ^= 0x01
  fs.writeFileSync(file, b)
}

async function keysAfterRepair(dir: string) {
  const report = await repair(dir)
  const db = await open(dir)
  const keys = (await db.list('n', { limit: 1000 })).keys
  const values = await Promise.all(keys.map((k) => db.get('n', k)))
  await db.close()
  return { report, keys, values }
}

t.test('damage to a record of zeros, in the segment being written: named, not cut', async (t) => {
  const dir = tempDir(t, 'torn')
  const db = await open(dir)
  await db.createNamespace('n')
  for (let i = 0; i < 40; i++) await db.put('n', key(i), sparse(i))
  const active = segmentFiles(dir).at(-1)!
  const copy = tempDir(t, 'torn-crash')
  crashCopy(dir, copy)
  await db.close()
  flipKeyOf(path.join(copy, path.basename(active)), 10)
  t.equal(await errorCode(open(copy)), 'CORRUPT', 'acknowledged records follow it: damage')
  const { report, keys, values } = await keysAfterRepair(copy)
  t.equal(keys.length, 39, 'repair keeps every intact record')
  t.notOk(keys.includes(key(10)), 'and leaves out the damaged one')
  t.ok(report.dropped.length > 0, 'which it reports')
  keys.forEach((k, i) => {
    t.same(values[i]?.value, sparse(Number(k.slice(1))), `${k} intact`)
  })
})

t.test(
  'repair reports damage at the end of a sealed segment, never takes it for torn',
  async (t) => {
    const dir = tempDir(t, 'torn')
    const db = await open(dir)
    await db.createNamespace('n')
    for (let i = 0; i < 40; i++) await db.put('n', key(i), sparse(i))
    await db.close() // the segment is sealed and the manifest names it
    const last = segmentFiles(dir).at(-1)!
    const id = Number(path.basename(last).slice(4, 12))
    t.ok(
      manifestOf(dir).sealed.some((s) => s.id === id),
      'the manifest names the segment',
    )
    flipKeyOf(last, 10)
    const { report, keys } = await keysAfterRepair(dir)
    t.equal(keys.length, 39, 'repair keeps every intact record of a sealed segment')
    t.ok(report.dropped.length > 0, 'and reports the damage')
  },
)

/**
 * A crash copy of a database whose next-to-last segment `a` has its last record torn at a
 * page boundary, with a's hint and the checkpoint gone (as before a's seal). The caller
 * writes the manifest the case needs.
 */
async function tornBeforeActive(t: Test) {
  const dir = tempDir(t, 'torn')
  const db = await open(dir, { segmentBytes: 64 * 1024 })
  await db.createNamespace('n')
  let written = 0
  while (segmentFiles(dir).length < 3) await db.put('n', key(written++), 'v'.repeat(5000))
  await sleep(50)
  const copy = tempDir(t, 'torn-crash')
  crashCopy(dir, copy)
  await db.close()
  const files = segmentFiles(copy)
  const a = files.at(-2)!
  const idOf = (file: string) => Number(path.basename(file).slice(4, 12))
  const m = manifestOf(copy)
  fs.rmSync(a.replace(/\.seg$/, '.hint'), { force: true })
  fs.rmSync(path.join(copy, 'CHECKPOINT'), { force: true })
  // Its last record reached the disk only up to a page boundary.
  const [start, end] = records(a).at(-1)!
  const page = Math.floor((end - 1) / 4096) * 4096
  t.ok(page > start, 'the last record crosses a page boundary')
  const b = fs.readFileSync(a)
  b.fill(0, page, end)
  fs.writeFileSync(a, b)
  const aId = idOf(a)
  return {
    copy,
    written,
    aId,
    bId: idOf(files.at(-1)!),
    manifest: m,
    sealed: m.sealed.filter((s) => s.id !== aId),
  }
}

async function keysAfterOpen(t: Test, dir: string): Promise<number> {
  const back = await open(dir)
  t.teardown(() => back.close())
  return (await back.list('n', { limit: 1000 })).keys.length
}

t.test('a crash while the write path had moved on: the segment before may be torn', async (t) => {
  const { copy, written, aId, manifest, sealed } = await tornBeforeActive(t)
  // As the directory is while a's last group is still being synced and the next segment has
  // just been started: a is not sealed, and is the segment the manifest names as active.
  writeManifestFile(copy, { ...manifest, active: aId, sealed })
  const n = await keysAfterOpen(t, copy)
  t.ok(n >= written - 2 && n < written, `the torn write is cut off: ${n} of ${written}`)
})

t.test(
  'a segment the manifest names as still being written, before the active one, may be torn',
  async (t) => {
    const { copy, written, aId, bId, manifest, sealed } = await tornBeforeActive(t)
    // Named as complete, the torn record is damage.
    writeManifestFile(copy, { ...manifest, active: bId, sealed })
    t.equal(await errorCode(open(copy)), 'CORRUPT', 'without the name: damage')
    // As the directory is when another segment's seal wrote the manifest after the write
    // path had moved on to b, while a's last group was still being synced: b is active, a
    // is named as still being written.
    writeManifestFile(copy, { ...manifest, active: bId, writing: [aId], sealed })
    const n = await keysAfterOpen(t, copy)
    t.ok(n >= written - 2 && n < written, `the torn write is cut off: ${n} of ${written}`)
  },
)

t.test(
  'without durability always, a segment written but not synced is named as being written',
  async (t) => {
    const dir = tempDir(t, 'torn-interval')
    const db = await open(dir, { durability: 'interval', syncIntervalMs: 60_000 })
    await db.createNamespace('n')
    await db.put('n', 'a', 'x')
    // The seal's sync of the segment left behind is slow: until it ends, that segment holds
    // acknowledged writes that may not be on disk.
    const sync = io.fdatasync
    let release = () => {}
    const held = new Promise<void>((r) => {
      release = r
    })
    io.fdatasync = async (fd: number) => {
      await held
      return sync(fd)
    }
    t.teardown(() => {
      io.fdatasync = sync
    })
    const left = db.active.id
    db.rotate()
    await db.log.writeManifest()
    const m = manifestOf(dir) as { writing?: number[] }
    t.same(m.writing, [left], 'the manifest names it')
    release()
    await db.close()
  },
)
