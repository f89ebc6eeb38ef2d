// The change feed's ring keeps a namespace's recent changes as bytes: every change read back
// is the one put in, in version order, across wrap-arounds, growth, drops and prepends.
import t, { type Test } from 'tap'
import { FeedRing, ROW_OVERHEAD, type RingInput } from '../../server/store/feed-ring.js'
import type { Change } from '../../server/store/types.js'

function change(version: number): RingInput {
  const key = `k/${version}/${'é'.repeat(version % 5)}`
  if (version % 7 === 0) return { type: 'delete', key, version }
  const c: RingInput = {
    type: 'put',
    key,
    version,
    value: Buffer.from(JSON.stringify({ v: version, pad: 'x'.repeat(version % 300) })),
  }
  if (version % 3 === 0) c.expiresAt = 1_700_000_000_000 + version
  if (version % 5 === 0) c.metadata = Buffer.from(`{"m":${version}}`)
  return c
}

/** A change as plain fields, to compare what was read with what was put in. */
function fields(c: RingInput | Change) {
  return {
    type: c.type,
    key: c.key,
    version: c.version,
    value: c.value?.toString(),
    expiresAt: c.expiresAt,
    metadata: c.metadata?.toString(),
  }
}

function same(t: Test, got: Change[], versions: number[], what: string) {
  t.same(
    got.map(fields),
    versions.map((v) => fields(change(v))),
    what,
  )
}

const range = (from: number, to: number, skip = new Set<number>()) => {
  const out: number[] = []
  for (let v = from; v <= to; v++) if (!skip.has(v)) out.push(v)
  return out
}

t.test('pushes, drops and reads across wrap-around and growth', async (t) => {
  const ring = new FeedRing(0)
  // Versions 500 and 2600 never committed (failed writes leave gaps).
  const gaps = new Set([500, 2600])
  for (let v = 1; v <= 3000; v++) {
    if (gaps.has(v)) continue
    ring.push(change(v))
    // Keep the newest 1000, so the rows wrap around many times.
    while (ring.length > 1000) ring.dropOldest()
  }
  t.equal(ring.length, 1000)
  const charge = (v: number) => {
    const c = change(v)
    return (
      ROW_OVERHEAD + Buffer.byteLength(c.key) + (c.value?.length ?? 0) + (c.metadata?.length ?? 0)
    )
  }
  const kept = range(1, 3000, gaps).slice(-1000)
  t.equal(
    ring.bytes,
    kept.reduce((n, v) => n + charge(v), 0),
    'the charge follows what is kept',
  )
  t.equal(ring.floor, kept[0]! - 1, 'the floor is the last version dropped')
  same(t, ring.read(ring.floor, 5000), kept, 'everything kept, in order')
  same(t, ring.read(2500, 10), range(2501, 2510), 'a page after a version')
  same(t, ring.read(2599, 3), range(2601, 2603), 'after a gap')
  t.same(ring.read(3000, 10), [], 'nothing after the newest')
})

t.test('older changes go in front; values larger than a chunk are kept whole', async (t) => {
  const ring = new FeedRing(100)
  for (let v = 101; v <= 200; v++) ring.push(change(v))
  ring.prepend(range(41, 100).map(change))
  ring.floor = 40
  same(t, ring.read(40, 1000), range(41, 200), 'the prepended run leads up to the rest')
  const big: RingInput = {
    type: 'put',
    key: 'big',
    version: 201,
    value: Buffer.alloc(3 * 1024 * 1024, 0x61),
  }
  ring.push(big)
  const [got] = ring.read(200, 1)
  t.equal(got?.value?.length, big.value!.length)
  t.ok(got?.value?.equals(big.value!), 'byte for byte')
  // Drop down to the big one: the rows before it go, it reads back the same.
  while (ring.length > 1) ring.dropOldest()
  t.equal(ring.floor, 200)
  t.ok(ring.read(0, 5)[0]?.value?.equals(big.value!), 'still byte for byte after the drops')
  ring.dropOldest()
  t.equal(ring.length, 0)
  t.equal(ring.bytes, 0)
  t.ok(ring.memory < 4096, `an empty ring holds little memory (${ring.memory} B)`)
  ring.push(change(202))
  same(t, ring.read(201, 5), [202], 'usable again once empty')
})

t.test(
  'a ring of one small change holds a few hundred bytes, and memory follows content',
  async (t) => {
    const ring = new FeedRing(0)
    ring.push(change(1))
    t.ok(ring.memory <= 2048, `one change: ${ring.memory} B`)
    for (let v = 2; v <= 5000; v++) ring.push(change(v))
    const full = ring.memory
    t.ok(full >= ring.bytes, `memory (${full} B) covers the charge (${ring.bytes} B)`)
    while (ring.length > 10) ring.dropOldest()
    t.ok(ring.memory < full / 2, `most of it goes with the changes (${ring.memory} B left)`)
  },
)
