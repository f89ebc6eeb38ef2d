// server/store/cluster/feed-unconfirmed.ts on its own: changes a Redis poller delivered
// unconfirmed stand only when the stream holds each of them, by id and fields, and no more;
// what it keeps stays within its bounds, the newest always among it.
import t from 'tap'
import {
  KEPT,
  KEPT_BYTES,
  type StreamEntry,
  Unconfirmed,
} from '../../server/store/cluster/feed-unconfirmed.js'

const entry = (version: number, ...fields: string[]): StreamEntry => [
  Buffer.from(`${version}-0`),
  fields.map((f) => Buffer.from(f)),
]

t.test('the stream as delivered stands; anything else does not', async (t) => {
  const u = new Unconfirmed()
  const sent = [entry(4, 't', 'p', 'k', 'lost', 'v', '"x"'), entry(5, 't', 'd', 'k', 'a')]
  u.add(sent)
  t.same(u.range, ['4-0', '5-0'], 'checked over the ids delivered')
  t.ok(u.standIn(sent.map(([id, f]) => [Buffer.from(id), f.map((b) => Buffer.from(b))])))
  t.notOk(u.standIn([sent[1]!]), 'the first one missing (lost, not taken again yet)')
  t.notOk(u.standIn([]), 'all of them missing')
  t.notOk(
    u.standIn([entry(4, 't', 'p', 'k', 'k4', 'v', '"x"'), sent[1]!]),
    'a version taken again by another write',
  )
  t.notOk(
    u.standIn([entry(4, 't', 'p', 'k', 'los', 't', 'v', '"x"'), sent[1]!]),
    'the same bytes split into other fields',
  )
  t.notOk(u.standIn([...sent, entry(6, 't', 'd', 'k', 'b')]), 'one more than was delivered')
  u.clear()
  t.equal(u.size, 0, 'let go once a replica confirms them')
})

t.test('at most KEPT changes, the oldest going first', async (t) => {
  const u = new Unconfirmed()
  for (let v = 1; v <= KEPT + 5; v++) u.add([entry(v, 't', 'd', 'k', `k${v}`)])
  t.equal(u.size, KEPT)
  t.same(u.range, ['6-0', `${KEPT + 5}-0`])
})

t.test('at most KEPT_BYTES, yet never without the newest', async (t) => {
  const u = new Unconfirmed()
  const mib = 'x'.repeat(1 << 20)
  for (let v = 1; v <= 10; v++) u.add([entry(v, 't', 'p', 'k', `k${v}`, 'v', mib)])
  t.equal(u.size, Math.floor(KEPT_BYTES / (1 << 20)) - 1, 'the newest that fit')
  t.same(u.range[1], '10-0')
  const huge = new Unconfirmed()
  huge.add([entry(1, 'v', 'x'.repeat(KEPT_BYTES + 1))])
  t.equal(huge.size, 1, 'one change past the bound alone is kept')
})
