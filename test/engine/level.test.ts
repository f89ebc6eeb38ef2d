// What CairnLevel adds to abstract-level's suite: byte keys in byte order (the empty key and
// keys beginning with 0x00 among them) as engine keys, the key length limit, one engine
// namespace on a real directory, and reopening.
import fs from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { open } from '../../engine/index.js'
import { CairnLevel, NAMESPACE } from '../../engine/level/index.js'
import { rng, tempDir } from './helpers.js'

const bytes = (...b: number[]) => Buffer.from(b)

t.test('byte keys come back in byte order, forward, reverse and in ranges', async (t) => {
  const dir = tempDir(t, 'level')
  const db = new CairnLevel<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' })
  const r = rng(7)
  const keys = [
    bytes(),
    bytes(0),
    bytes(0, 0),
    bytes(0, 1),
    bytes(1),
    bytes(0x7f),
    bytes(0x80),
    bytes(0xc3, 0xa9),
    bytes(0xff),
    bytes(0xff, 0),
    bytes(0xff, 0xff),
    ...Array.from({ length: 200 }, () =>
      Buffer.from(Array.from({ length: 1 + Math.floor(r() * 6) }, () => Math.floor(r() * 256))),
    ),
  ]
  const unique = [...new Map(keys.map((k) => [k.toString('hex'), k])).values()]
  const sorted = [...unique].sort(Buffer.compare)
  await db.batch(unique.map((key) => ({ type: 'put' as const, key, value: key })))
  const hex = (ks: Buffer[]) => ks.map((k) => k.toString('hex'))
  t.same(hex(await db.keys().all()), hex(sorted), 'forward: byte order')
  t.same(hex(await db.keys({ reverse: true }).all()), hex([...sorted].reverse()), 'reverse')
  for (let i = 0; i < 20; i++) {
    const [a, b] = [
      sorted[Math.floor(r() * sorted.length)]!,
      sorted[Math.floor(r() * sorted.length)]!,
    ]
    const [lo, hi] = Buffer.compare(a, b) <= 0 ? [a, b] : [b, a]
    const want = sorted.filter((k) => Buffer.compare(k, lo) > 0 && Buffer.compare(k, hi) <= 0)
    t.same(
      hex(await db.keys({ gt: lo, lte: hi }).all()),
      hex(want),
      `(${lo.toString('hex')}, ${hi.toString('hex')}]`,
    )
    t.same(
      hex(await db.keys({ gt: lo, lte: hi, reverse: true }).all()),
      hex([...want].reverse()),
      `the same range reversed`,
    )
  }
  for (const k of sorted) t.same(await db.get(k), k, `get ${k.toString('hex')}`)
  // A text key and its bytes are one key.
  await db.put(Buffer.from('é'), bytes(1))
  t.same(await db.get('é' as unknown as Buffer, { keyEncoding: 'utf8' }), bytes(1))
  await db.close()

  // On disk: one engine namespace, keys as the engine keeps any other (ASCII ones as they are).
  const engine = await open(dir)
  t.same(
    engine.namespaces().map((n) => n.name),
    [NAMESPACE],
  )
  // 'é' is c3 a9, a key already there.
  t.equal(engine.namespaceStats(NAMESPACE)!.keys, unique.length)
  await engine.close()

  const again = new CairnLevel<Buffer, Buffer>(dir, {
    keyEncoding: 'buffer',
    valueEncoding: 'buffer',
  })
  t.same(
    hex(await again.keys({ lt: bytes(0x80) }).all()),
    hex(sorted.filter((k) => k[0] === undefined || k[0] < 0x80)),
    'reopened: the same keys',
  )
  await again.close()
})

t.test('the key length limit: 256 bytes always, 512 when ASCII', async (t) => {
  const dir = tempDir(t, 'level')
  const db = new CairnLevel<Buffer, string>(dir, { keyEncoding: 'buffer' })
  await db.put(Buffer.alloc(256, 0xff), 'high')
  await db.put(Buffer.concat([bytes(0), Buffer.alloc(255, 0xff)]), 'leading zero')
  await db.put(Buffer.alloc(512, 0x61), 'ascii')
  t.equal(await db.get(Buffer.alloc(256, 0xff)), 'high')
  t.equal(await db.get(Buffer.alloc(512, 0x61)), 'ascii')
  for (const key of [
    Buffer.alloc(257, 0xff),
    Buffer.alloc(513, 0x61),
    Buffer.concat([bytes(0), Buffer.alloc(511, 0x61)]),
  ]) {
    const err = await db.put(key, 'x').catch((e: { code?: string }) => e)
    t.equal((err as { code?: string }).code, 'LEVEL_INVALID_KEY', `${key.length} bytes refused`)
    t.equal(await db.get(key), undefined, 'and a read of it finds nothing')
    await db.del(key)
    await db.batch([{ type: 'del', key }])
  }
  const batch = await db
    .batch([
      { type: 'put', key: bytes(1), value: 'a' },
      { type: 'put', key: Buffer.alloc(300, 0xff), value: 'b' },
    ])
    .catch((e: { code?: string }) => e)
  t.equal((batch as { code?: string }).code, 'LEVEL_INVALID_KEY', 'a batch with a key too long...')
  t.equal(await db.get(bytes(1)), undefined, '...writes nothing')
  await db.close()
})

t.test('a second open of the directory is refused as locked', async (t) => {
  const dir = tempDir(t, 'level')
  const a = new CairnLevel(dir)
  await a.open()
  const b = new CairnLevel(dir)
  const err = (await b.open().catch((e) => e)) as { code?: string; cause?: { code?: string } }
  t.equal(err.code, 'LEVEL_DATABASE_NOT_OPEN')
  t.equal(err.cause?.code, 'LEVEL_LOCKED')
  await a.close()
  t.ok(fs.existsSync(path.join(dir, 'NAMESPACES')))
})
