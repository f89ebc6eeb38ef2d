// The change feed: every committed write once, in version order, from history and live
// alike; a subscription made before writes misses none of them; the feed's version is the
// last acknowledged write's.
import type { Test } from 'tap'
import type { Change, Store } from '../../../server/store/types.js'

const until = async (what: () => boolean, ms = 10_000) => {
  const end = Date.now() + ms
  while (!what() && Date.now() < end) await new Promise((r) => setTimeout(r, 20))
}

export async function feedSuite(t: Test, store: Store): Promise<void> {
  const ns = 'm/feed'
  t.equal(await store.createNamespace(ns), true)
  const live: Change[] = []
  const stop = store.feed.subscribe(ns, (cs) => live.push(...cs))
  const versions: number[] = []
  for (let i = 0; i < 30; i++) {
    const w = await store.put(ns, `k${i % 7}`, Buffer.from(String(i)))
    versions.push(w.version)
    if (i % 5 === 4) await store.delete(ns, `k${i % 7}`)
  }
  const tx = await store.transact(ns, [
    { op: 'put', key: 'x', value: Buffer.from('"t"') },
    { op: 'delete', key: 'k0' },
  ])
  const last = tx.version
  t.equal(await store.feed.version(ns), last, 'the version is the last write')

  const read: Change[] = []
  for (let since = 0; ; ) {
    const page = await store.feed.read(ns, since, 8)
    if (page === 'expired') {
      t.fail('history of a new namespace reaches back to 0')
      break
    }
    if (page.length === 0) break
    read.push(...page)
    since = page[page.length - 1]!.version
  }
  const vs = read.map((c) => c.version)
  t.same(
    vs,
    [...vs].sort((a, b) => a - b),
    'history in version order',
  )
  t.equal(new Set(vs).size, vs.length, 'each change once')
  t.equal(vs[vs.length - 1], last, 'up to the last write')
  for (const v of versions) t.ok(vs.includes(v), `the put at ${v} is there`)
  const firstPut = read.find((c) => c.version === versions[0])!
  t.same(
    [firstPut.type, firstPut.key, firstPut.value?.toString()],
    ['put', 'k0', '0'],
    'a change names its key and value',
  )
  t.equal(read[read.length - 1]!.type, 'delete', "the transaction's delete")

  await until(() => live.length >= read.length)
  t.same(
    live.map((c) => [c.version, c.type, c.key]),
    read.map((c) => [c.version, c.type, c.key]),
    'a subscription made before the writes got the same changes, none twice',
  )
  stop()
  await store.put(ns, 'after', Buffer.from('1'))
  await new Promise((r) => setTimeout(r, 200))
  t.equal(live.length, read.length, 'and nothing after it stopped')
  t.same(await store.feed.read(ns, last + 1, 10), [], 'nothing after the newest')
  t.equal(await store.dropNamespace(ns), true)
}
