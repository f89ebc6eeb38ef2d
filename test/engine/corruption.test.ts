// Damage on disk: flipped bytes, torn tails, bad or missing hint files.
import fs from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { open } from '../../engine/index.js'
import type { OpenOptions } from '../../engine/types.js'
import { caught, rng, seedFromEnv, tempDir } from './helpers.js'

const isHint = (name: string) => /hint/i.test(name)
const isSegment = (name: string) => /\.(seg|log|data|dat)$|^seg/i.test(name) && !isHint(name)

function files(dir: string, pred: (name: string) => boolean): string[] {
  const out: string[] = []
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name)
    if (e.isDirectory()) out.push(...files(p, pred))
    else if (pred(e.name)) out.push(p)
  }
  return out.sort()
}
const segments = (dir: string) => files(dir, isSegment)
const hints = (dir: string) => files(dir, isHint)

const key = (i: number) => `k${String(i).padStart(5, '0')}`
const valueFor = (i: number) => `value-${i}-${'v'.repeat(100)}`

/** Writes n distinct keys in order, then closes. */
async function fill(dir: string, n: number, options: OpenOptions) {
  const db = await open(dir, options)
  await db.createNamespace('d')
  for (let i = 0; i < n; i++) await db.put('d', key(i), valueFor(i))
  await db.close()
}

/** Reads every key; returns which are missing and which came back wrong. */
async function survey(dir: string, n: number, options: OpenOptions) {
  const db = await open(dir, options)
  const missing: number[] = []
  const wrong: number[] = []
  const failed: string[] = []
  for (let i = 0; i < n; i++) {
    try {
      const got = await db.get('d', key(i))
      if (!got) missing.push(i)
      else if (got.value !== valueFor(i)) wrong.push(i)
    } catch (err) {
      failed.push(`${key(i)}: ${(err as { code?: string }).code}`)
    }
  }
  const listed = (await db.list('d', { limit: 100_000 })).keys.length
  await db.close()
  return { missing, wrong, failed, listed }
}

function flipMiddle(file: string) {
  const buf = fs.readFileSync(file)
  const at = Math.floor(buf.length / 2)
  buf[at] ^= 0xff
  buf[at + 1] ^= 0x5a
  fs.writeFileSync(file, buf)
  return at
}

t.test('a flipped byte in a sealed segment makes open fail naming file and offset', async (t) => {
  const dir = tempDir(t, 'corrupt')
  const options = { segmentBytes: 8 * 1024 }
  await fill(dir, 600, options)
  const segs = segments(dir)
  t.ok(
    segs.length >= 4,
    `several segments written (${segs.length}: ${segs.map((s) => path.basename(s)).join(', ')})`,
  )
  const victim = segs[1]
  flipMiddle(victim)
  for (const h of hints(dir)) fs.rmSync(h) // so recovery must read the damaged bytes
  const err = await caught(open(dir, options))
  t.equal(err?.code, 'CORRUPT', 'open rejects with CORRUPT')
  t.match(err?.message ?? '', path.basename(victim), 'message names the segment file')
  t.match(err?.message ?? '', /\d/, 'message holds an offset')
  t.comment(`message: ${err?.message}`)

  const res = await survey(dir, 600, { ...options, repair: true })
  t.same(res.wrong, [], 'repair returns no wrong value')
  t.same(res.failed, [], 'every read after repair succeeds')
  t.ok(res.missing.length >= 1, `the damaged record is dropped (${res.missing.length} dropped)`)
  t.ok(res.missing.length <= 70, 'at most the damaged segment is lost')
  t.equal(res.listed, 600 - res.missing.length, 'listing agrees with gets')
  const last = res.missing[res.missing.length - 1] ?? 0
  t.ok(last < 300, 'keys in later segments are all kept')
  const again = await survey(dir, 600, options)
  t.same(again.missing, res.missing, 'after repair a normal open works and sees the same data')
})

t.test('a flipped byte mid-way in the newest segment is corruption, not a torn tail', async (t) => {
  const dir = tempDir(t, 'corrupt')
  const options = {}
  await fill(dir, 400, options)
  const segs = segments(dir)
  const victim = segs[segs.length - 1]
  flipMiddle(victim)
  for (const h of hints(dir)) fs.rmSync(h)
  const err = await caught(open(dir, options))
  t.equal(
    err?.code,
    'CORRUPT',
    'intact records follow the damage, so open refuses rather than truncate them',
  )
  t.match(err?.message ?? '', path.basename(victim))
  const res = await survey(dir, 400, { repair: true })
  t.same(res.wrong, [])
  t.ok(
    res.missing.length >= 1 && res.missing.length <= 5,
    `repair drops only the damaged record(s): ${res.missing}`,
  )
  t.ok(!res.missing.includes(399), 'records after the damage are kept')
})

t.test('with hint files intact, a damaged value is never returned as data', async (t) => {
  const dir = tempDir(t, 'corrupt')
  const options = { segmentBytes: 8 * 1024, cacheBytes: 0 }
  await fill(dir, 600, options)
  flipMiddle(segments(dir)[1])
  try {
    // Opening may trust the hints and find the damage only on reading; close it again.
    await (await open(dir, options)).close()
  } catch (err) {
    t.equal((err as { code?: string }).code, 'CORRUPT', 'open may refuse, with CORRUPT')
    return
  }
  const res = await survey(dir, 600, options)
  t.same(res.wrong, [], 'no key returns altered bytes')
  for (const f of res.failed) t.match(f, /CORRUPT$/, 'a damaged record reads as CORRUPT')
})

t.test(
  'a torn tail of the segment being appended is cut and everything before it kept',
  async (t) => {
    const seed = seedFromEnv('CAIRN_SEED')
    t.comment(`seed ${seed}`)
    const r = rng(seed)
    for (const segmentBytes of [undefined, 8 * 1024]) {
      for (let round = 0; round < 4; round++) {
        const options = { segmentBytes }
        // The files as a crash leaves them: the last segment still being appended to.
        const live = tempDir(t, 'torn-live')
        const writer = await open(live, options)
        await writer.createNamespace('d')
        for (let i = 0; i < 300; i++) await writer.put('d', key(i), valueFor(i))
        const dir = tempDir(t, 'torn')
        fs.cpSync(live, dir, { recursive: true, filter: (src) => path.basename(src) !== 'LOCK' })
        await writer.close()
        const segs = segments(dir)
        const last = segs[segs.length - 1]
        const size = fs.statSync(last).size
        const cut = 1 + Math.floor(r() * Math.min(size - 64, 1500))
        fs.truncateSync(last, size - cut)
        const res = await survey(dir, 300, options)
        const label = `segmentBytes ${segmentBytes}, cut ${cut} of ${size} bytes`
        t.same(res.wrong, [], `${label}: no wrong values`)
        t.same(res.failed, [], `${label}: no failed reads`)
        const firstMissing = res.missing[0] ?? 300
        t.same(
          res.missing,
          Array.from({ length: 300 - firstMissing }, (_, i) => firstMissing + i),
          `${label}: survivors are a prefix`,
        )
        t.ok(
          res.missing.length <= Math.ceil(cut / 100) + 1,
          `${label}: only the torn records lost (${res.missing.length})`,
        )
        // Appends after the truncation must be readable after another reopen.
        const db = await open(dir, options)
        await db.put('d', 'after-tear', 1)
        await db.close()
        const db2 = await open(dir, options)
        t.equal(
          (await db2.get('d', 'after-tear'))?.value,
          1,
          `${label}: writes after recovery survive`,
        )
        await db2.close()
      }
    }
  },
)

t.test('missing or damaged hint files fall back to scanning', async (t) => {
  const damage: [string, (f: string) => void][] = [
    ['removed', (f) => fs.rmSync(f)],
    ['flipped', (f) => void flipMiddle(f)],
    ['truncated', (f) => fs.truncateSync(f, Math.floor(fs.statSync(f).size / 2))],
    ['emptied', (f) => fs.truncateSync(f, 0)],
  ]
  for (const [how, hurt] of damage) {
    const dir = tempDir(t, 'hint')
    const options = { segmentBytes: 16 * 1024 }
    const db = await open(dir, options)
    await db.createNamespace('d')
    for (let i = 0; i < 800; i++) await db.put('d', key(i), valueFor(i))
    for (let i = 0; i < 800; i += 5) await db.put('d', key(i), valueFor(i)) // overwrites in later segments
    for (let i = 1; i < 800; i += 10) await db.delete('d', key(i))
    await db.close()
    const hs = hints(dir)
    t.ok(hs.length >= 2, `${how}: hint files exist (${hs.length})`)
    for (const h of hs) hurt(h)
    const db2 = await open(dir, options)
    const listed = (await db2.list('d', { limit: 10_000 })).keys
    t.equal(listed.length, 720, `${how}: all live keys, no deleted one`)
    let bad = 0
    for (let i = 0; i < 800; i++) {
      const got = await db2.get('d', key(i))
      if (i % 10 === 1 ? got !== undefined : got?.value !== valueFor(i)) bad++
    }
    t.equal(bad, 0, `${how}: every value intact`)
    await db2.close()
  }
})
