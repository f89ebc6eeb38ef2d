// engine/sorted-keys.ts on its own, against a plain sorted array as the model: inserts and
// removals across chunk splits and merges, seeks, following, prefix ends and the JSON text
// of a listing, in UTF-8 byte order also once keys beyond the BMP arrive.
import t from 'tap'
import { SortedKeys } from '../../engine/sorted-keys.js'

const byBytes = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b))

function rng(seed: number) {
  let s = seed >>> 0
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0
    return s / 2 ** 32
  }
}

const all = (s: SortedKeys) => s.following(undefined, Number.MAX_SAFE_INTEGER)

t.test('inserts and removals keep byte order across many chunks', async (t) => {
  const rand = rng(7)
  const s = new SortedKeys()
  const model = new Set<string>()
  for (let i = 0; i < 20_000; i++) {
    const k = `k${Math.floor(rand() * 5000)
      .toString()
      .padStart(4, '0')}`
    if (rand() < 0.7) {
      s.insert(k)
      model.add(k)
    } else {
      s.remove(k)
      model.delete(k)
    }
  }
  const want = [...model].sort(byBytes)
  t.equal(s.size, want.length, 'size counts distinct keys')
  t.same(all(s), want, 'every key, in order')
  t.ok(s.chunks.length > 1, `held in ${s.chunks.length} chunks`)
  t.ok(
    s.chunks.every((c) => c.length > 0),
    'no empty chunk is left behind',
  )
  s.insert(want[0]!)
  t.equal(s.size, want.length, 'inserting a present key changes nothing')
  s.remove('absent')
  t.equal(s.size, want.length, 'removing an absent key changes nothing')
})

t.test('keys beyond the BMP sort by their bytes, not by UTF-16 units', async (t) => {
  // U+FF61 is one unit above the surrogates; U+1F600 is a surrogate pair below it in
  // UTF-16 but above it in UTF-8.
  const keys = ['a', '\uff61', '😀', 'z', '\ud7ff', 'é']
  const s = new SortedKeys()
  for (const k of keys) s.insert(k)
  t.ok(s.wide, 'a high unit switches to byte comparison')
  t.same(all(s), [...keys].sort(byBytes))
})

t.test('from() takes a sorted list as it is', async (t) => {
  const keys = Array.from({ length: 3000 }, (_, i) => `x${String(i).padStart(5, '0')}`)
  const s = SortedKeys.from(keys, false)
  t.equal(s.size, 3000)
  t.same(all(s), keys)
  s.insert('x00000a')
  t.same(s.following('x00000', 2), ['x00000a', 'x00001'], 'and takes inserts after')
  t.same(SortedKeys.from([], false).following(undefined, 10), [], 'an empty list')
})

t.test('seek, following and the end of a prefix', async (t) => {
  const keys = Array.from({ length: 2000 }, (_, i) => `p${i % 10}/${String(i).padStart(4, '0')}`)
  const s = new SortedKeys()
  for (const k of keys) s.insert(k)
  const sorted = [...keys].sort(byBytes)
  const at = ([ci, i]: [number, number]) => s.chunks[ci]![i]
  t.equal(
    at(s.seek('p3/', false)),
    sorted.find((k) => k >= 'p3/'),
    'first key >= p3/',
  )
  t.equal(at(s.seek(sorted[10]!, false)), sorted[10], 'a present key is found')
  t.equal(at(s.seek(sorted[10]!, true)), sorted[11], 'strict: the one after it')
  t.same(s.following(sorted[99], 3), sorted.slice(100, 103), 'following after a key')
  t.same(s.following('p9/9999', 5), [], 'nothing after the last')
  const [ci, i] = s.seekPastPrefix('p3/')
  const past = s.chunks[ci]![i]
  t.equal(
    past,
    sorted.find((k) => !k.startsWith('p3/') && k > 'p3/'),
    'just past p3/',
  )
})

t.test('the JSON text of a listing equals JSON.stringify of its keys', async (t) => {
  const keys = Array.from({ length: 600 }, (_, i) => `k"${i}\\é${String(i).padStart(3, '0')}`)
  const s = new SortedKeys()
  for (const k of keys) s.insert(k)
  t.same(all(s), [...keys].sort(byBytes), 'keys with quotes and escapes in order')
  const spans = [0, 5, s.chunks[0]!.length, 1, 0, s.chunks[1]!.length]
  const count = s.chunks[0]!.length - 5 + 10
  const want = [...s.chunks[0]!.slice(5), ...s.chunks[1]!.slice(0, 10)]
  let got = s.json(spans, count)
  let asked = 0
  // A chunk's text is made only after it served several listings unchanged.
  while (got === undefined && asked < 100) {
    asked++
    got = s.json(spans, count)
  }
  t.ok(got, `text made after ${asked} listings`)
  t.equal(got!.toString(), JSON.stringify(want), 'byte for byte')
  t.same(JSON.parse(got!.toString()), want)
  s.insert('k"0000')
  t.equal(s.json(spans, count), undefined, 'a changed chunk makes its text again later')
  t.equal(s.json([], 0)!.toString(), '[]', 'nothing is []')
})
