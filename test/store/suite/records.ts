// The service's records: put and get, create that will not overwrite or overfill a group,
// listing a group in id order a page at a time, batches, and counters whose additions made
// under one token count once.
import type { Test } from 'tap'
import type { Store } from '../../../server/store/types.js'

export async function recordsSuite(t: Test, store: Store): Promise<void> {
  const r = store.records
  await r.put('session', 'grp/one', { n: 1 })
  t.same(await r.get('session', 'grp/one'), { n: 1 }, 'put then get')
  t.equal(await r.get('session', 'grp/none'), undefined, 'a missing record')
  t.equal(await r.create('session', 'grp/one', { n: 2 }), 'exists', 'create will not overwrite')
  t.same(await r.get('session', 'grp/one'), { n: 1 })
  t.equal(await r.create('session', 'grp/two', { n: 2 }, { maxInGroup: 3 }), 'created')
  t.equal(await r.create('session', 'grp/three', { n: 3 }, { maxInGroup: 3 }), 'created')
  t.equal(
    await r.create('session', 'grp/four', { n: 4 }, { maxInGroup: 3 }),
    'full',
    'a full group',
  )

  const ids: string[] = []
  let after: string | undefined
  for (;;) {
    const page = await r.list<{ n: number }>('session', 'grp/', after, 2)
    ids.push(...page.items.map(([id]) => id))
    if (!page.next) break
    after = page.next
  }
  t.same(ids, ['grp/one', 'grp/three', 'grp/two'], 'a group in id order, page by page')

  await r.batch([
    { kind: 'session', id: 'grp/one', delete: true },
    { kind: 'session', id: 'grp/five', value: { n: 5 } },
  ])
  t.equal(await r.get('session', 'grp/one'), undefined, 'a batch deletes')
  t.same(await r.get('session', 'grp/five'), { n: 5 }, 'and puts')
  t.equal(await r.delete('session', 'grp/five'), true)
  t.equal(await r.delete('session', 'grp/five'), false, 'a second delete finds nothing')

  const a = await r.add('usage', 'acct/day', { requests: 2, errors: 1 }, undefined, 'tok-1')
  t.same([a.requests, a.errors], [2, 1], 'an addition makes the counter')
  const again = await r.add('usage', 'acct/day', { requests: 2, errors: 1 }, undefined, 'tok-1')
  t.same([again.requests, again.errors], [2, 1], 'the same token counts once')
  const b = await r.add('usage', 'acct/day', { requests: 3 }, { bytes: 10 }, 'tok-2')
  t.same([b.requests, b.errors, b.bytes], [5, 1, 10], 'another token adds, and set sets')
}
