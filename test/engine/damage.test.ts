// Files damaged while the database was closed: a sealed segment cut short or deleted, a flipped
// byte in a record, a hint or the manifest. Each is found and named (never a silent loss),
// and repair keeps every intact record and lists what it dropped.
import fs from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { open, repair } from '../../engine/index.js'
import { caught, errorCode, tempDir } from './helpers.js'

const OPTIONS = { segmentBytes: 8 * 1024, cacheBytes: 0, autoCompact: false }
const N = 400
const key = (i: number) => `k${String(i).padStart(4, '0')}`
const valueFor = (i: number) => `value-${i}-${'v'.repeat(90)}`

async function fill(dir: string): Promise<void> {
  const db = await open(dir, OPTIONS)
  await db.createNamespace('d')
  for (let i = 0; i < N; i++) await db.put('d', key(i), valueFor(i))
  await db.close()
}

const segFiles = (dir: string) =>
  fs
    .readdirSync(dir)
    .filter((n) => /^seg-\d+\.seg$/.test(n))
    .sort()

/** Which keys read back intact, which are missing, and which fail. */
async function survey(dir: string) {
  const db = await open(dir, OPTIONS)
  const missing: number[] = []
  const wrong: string[] = []
  for (let i = 0; i < N; i++) {
    try {
      const got = await db.get('d', key(i))
      if (!got) missing.push(i)
      else if (got.value !== valueFor(i)) wrong.push(key(i))
    } catch (err) {
      wrong.push(`${key(i)}: ${(err as { code?: string }).code}`)
    }
  }
  await db.close()
  return { missing, wrong }
}

/** Keys whose record lies in the given segment (read from the segment's own bytes). */
function keysIn(dir: string, name: string): number[] {
  const text = fs.readFileSync(path.join(dir, name)).toString('latin1')
  // A value is stored msgpack-encoded: a header of a few bytes sits between key and text.
  return [...text.matchAll(/k(\d{4})[\s\S]{1,3}value-/g)].map((m) => Number(m[1]))
}

t.test('a sealed segment cut short is named at open, and repair keeps the rest', async (t) => {
  const dir = tempDir(t, 'damage')
  await fill(dir)
  const segs = segFiles(dir)
  t.ok(segs.length >= 4, `several segments (${segs.length})`)
  const victim = segs[1]!
  const size = fs.statSync(path.join(dir, victim)).size
  fs.truncateSync(path.join(dir, victim), size - 150)
  const err = await caught(open(dir, OPTIONS))
  t.equal(err?.code, 'CORRUPT', 'open refuses')
  t.match(err?.message, victim, 'naming the file')
  t.match(err?.message, /cut short/, 'and what is wrong with it')
  t.match(err?.message, /cairn repair/, 'and what to do')

  const report = await repair(dir)
  t.ok(report.dropped.length >= 1, `repair reports the loss (${JSON.stringify(report.dropped)})`)
  t.ok(
    report.dropped.every((d) => d.file === victim),
    'only in the damaged segment',
  )
  const res = await survey(dir)
  t.same(res.wrong, [], 'nothing wrong after repair')
  t.ok(
    res.missing.length >= 1 && res.missing.length <= 3,
    `only the cut records lost (${res.missing})`,
  )
  const inVictim = new Set(keysIn(dir, victim))
  t.ok(
    res.missing.every((i) => !inVictim.has(i)),
    'the lost keys are the ones the cut removed',
  )
})

t.test(
  'a deleted sealed segment is named at open; repair reports it and keeps the rest',
  async (t) => {
    const dir = tempDir(t, 'damage')
    await fill(dir)
    const segs = segFiles(dir)
    const victim = segs[2]!
    const lost = keysIn(dir, victim)
    fs.rmSync(path.join(dir, victim))
    const err = await caught(open(dir, OPTIONS))
    t.equal(err?.code, 'CORRUPT')
    t.match(err?.message, victim, 'names the missing file')
    t.match(err?.message, /missing/)
    const report = await repair(dir)
    t.same(
      report.dropped.map((d) => [d.file, d.reason]),
      [[victim, 'segment missing']],
      'repair says which segment was lost',
    )
    const res = await survey(dir)
    t.same(res.wrong, [])
    t.same(res.missing, lost, 'exactly the keys of the deleted segment are gone')
  },
)

t.test(
  'a flipped byte in a record: reads name it, compaction will not copy it, repair drops it',
  async (t) => {
    const dir = tempDir(t, 'damage')
    await fill(dir)
    const segs = segFiles(dir)
    const file = path.join(dir, segs[1]!)
    const bytes = fs.readFileSync(file)
    const victim = keysIn(dir, segs[1]!)[3]!
    const vAt = bytes.indexOf(`value-${victim}-`) + 8
    bytes[vAt] ^= 0x01
    fs.writeFileSync(file, bytes)

    const db = await open(dir, OPTIONS)
    const err = await caught(db.get('d', key(victim)))
    t.equal(err?.code, 'CORRUPT', 'the read is refused as CORRUPT, not answered with bad data')
    t.match(err?.message, segs[1]!, 'naming the file')
    t.match(err?.message, /offset \d+/, 'and the offset')
    t.equal(db.stats().corruptReads, 1, 'and counted')
    t.equal((await db.get('d', key(victim + 1)))?.value, valueFor(victim + 1), 'other keys read')
    t.equal(await errorCode(db.compact()), 'CORRUPT', 'compaction stops at the damage')
    t.equal(
      await errorCode(db.get('d', key(victim))),
      'CORRUPT',
      'still damaged, never copied over',
    )
    await db.close()

    const report = await repair(dir)
    t.same(
      report.dropped.map((d) => [d.namespace, d.key, d.file]),
      [['d', key(victim), segs[1]]],
      'repair names the dropped key, its namespace and file',
    )
    t.type(report.dropped[0]?.offset, 'number')
    t.ok(report.kept >= N - 1, `and keeps the rest (${report.kept} records)`)
    const res = await survey(dir)
    t.same(res.wrong, [])
    t.same(res.missing, [victim])
    const again = await open(dir, OPTIONS)
    await again.compact()
    t.equal((await again.get('d', key(0)))?.value, valueFor(0), 'compaction works after repair')
    await again.close()
  },
)

t.test('a flipped byte in a hint: the hint is not trusted and nothing is lost', async (t) => {
  const dir = tempDir(t, 'damage')
  await fill(dir)
  const hint = path.join(dir, segFiles(dir)[1]!.replace('.seg', '.hint'))
  const bytes = fs.readFileSync(hint)
  bytes[40] ^= 0x10
  fs.writeFileSync(hint, bytes)
  const res = await survey(dir)
  t.same(res, { missing: [], wrong: [] }, 'every key read from the segment itself')
})

t.test('a damaged manifest is named; repair rebuilds it', async (t) => {
  const dir = tempDir(t, 'damage')
  await fill(dir)
  const file = path.join(dir, 'MANIFEST')
  const bytes = fs.readFileSync(file)
  bytes[bytes.length - 3] ^= 0x04
  fs.writeFileSync(file, bytes)
  const err = await caught(open(dir, OPTIONS))
  t.equal(err?.code, 'CORRUPT')
  t.match(err?.message, /MANIFEST/)
  t.match(err?.message, /cairn repair/)
  const report = await repair(dir)
  t.same(report.dropped, [], 'nothing to drop')
  t.same(await survey(dir), { missing: [], wrong: [] })
})

t.test('data files are private whatever the umask, old ones too', async (t) => {
  const dir = tempDir(t, 'damage')
  const old = process.umask(0)
  t.teardown(() => process.umask(old))
  await fill(dir)
  fs.chmodSync(dir, 0o755)
  const first = segFiles(dir)[0]!
  fs.chmodSync(path.join(dir, first), 0o644)
  const db = await open(dir, OPTIONS)
  await db.put('d', 'more', 1)
  t.equal(fs.statSync(dir).mode & 0o777, 0o700, 'the directory is 0700')
  for (const name of fs.readdirSync(dir))
    t.equal(fs.statSync(path.join(dir, name)).mode & 0o777, 0o600, `${name} is 0600`)
  await db.close()
})

t.test(
  "a damaged segment header: repair rebuilds it, and what the segment's records overwrote or deleted stays so",
  async (t) => {
    const dir = tempDir(t, 'damage-header')
    await fill(dir)
    const db = await open(dir, OPTIONS)
    for (let i = 0; i < 20; i++) await db.put('d', key(i), `new-${i}`)
    for (let i = 20; i < 30; i++) await db.delete('d', key(i))
    await db.close()
    const victim = segFiles(dir).find((n) =>
      fs.readFileSync(path.join(dir, n)).toString('latin1').includes('new-0'),
    )!
    t.ok(victim, `the overwrites are in ${victim}`)
    const file = path.join(dir, victim)
    const bytes = fs.readFileSync(file)
    bytes[13] = bytes[13]! ^ 0xff // the segment id, inside the header's checksum
    fs.writeFileSync(file, bytes)

    const report = await repair(dir)
    t.same(
      report.dropped.map((d) => [d.file, d.reason]),
      [[victim, 'damaged segment header, rebuilt']],
      'the header is named, and nothing is left out',
    )
    const again = await open(dir, OPTIONS)
    t.teardown(() => again.close())
    const stale: string[] = []
    for (let i = 0; i < 20; i++)
      if ((await again.get('d', key(i)))?.value !== `new-${i}`) stale.push(key(i))
    for (let i = 20; i < 30; i++)
      if ((await again.get('d', key(i))) !== undefined) stale.push(key(i))
    for (let i = 30; i < N; i++)
      if ((await again.get('d', key(i)))?.value !== valueFor(i)) stale.push(key(i))
    t.same(stale, [], 'no overwritten value or deleted key came back, nothing else changed')
  },
)

t.test('a damaged NAMESPACES is read from its copy; both damaged is named', async (t) => {
  const dir = tempDir(t, 'damage-names')
  await fill(dir)
  const flip = (name: string) => {
    const file = path.join(dir, name)
    const bytes = fs.readFileSync(file)
    bytes[bytes.length - 3] = bytes[bytes.length - 3]! ^ 0x01
    fs.writeFileSync(file, bytes)
  }
  flip('NAMESPACES')
  const res = await survey(dir)
  t.same([res.missing, res.wrong], [[], []], 'opened from the copy, every key there')
  const db = await open(dir, OPTIONS)
  t.same(
    db.namespaces().map((n) => n.name),
    ['d'],
  )
  await db.close()
  t.same(
    fs.readFileSync(path.join(dir, 'NAMESPACES')),
    fs.readFileSync(path.join(dir, 'NAMESPACES.copy')),
    'and NAMESPACES written back whole',
  )
  flip('NAMESPACES')
  flip('NAMESPACES.copy')
  const err = await caught(open(dir, OPTIONS))
  t.equal(err?.code, 'CORRUPT')
  t.match(err?.message, /NAMESPACES.copy is damaged too/)
})
