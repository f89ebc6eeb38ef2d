// engine/kept-chain.ts on its own, against a plain array as the model (what window.ts kept
// before): versions added mostly in order and sometimes older (recovery), a version kept
// twice, the oldest leaving as a window moves on and others leaving from inside, and the
// newest version at or below a point, across many cuts of the array.
import t from 'tap'
import { KeptChain } from '../../engine/kept-chain.js'

interface V {
  version: number
  n: number
}

function rng(seed: number) {
  let s = seed >>> 0
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0
    return s / 2 ** 32
  }
}

/** What window.ts did with an array: the behaviour the chain must keep. */
class ArrayModel {
  items: V[] = []
  add(it: V): void {
    let at = this.items.length
    while (at > 0 && this.items[at - 1]!.version > it.version) at--
    if (at === this.items.length) this.items.push(it)
    else if (this.items[at - 1]?.version !== it.version) this.items.splice(at, 0, it)
  }
  remove(it: V): void {
    const i = this.items.indexOf(it)
    if (i >= 0) this.items.splice(i, 1)
  }
  latest(v: number): V | undefined {
    for (let i = this.items.length - 1; i >= 0; i--)
      if (this.items[i]!.version <= v) return this.items[i]
    return undefined
  }
}

const contents = (c: KeptChain<V>) => Array.from({ length: c.length }, (_, i) => c.at(i))

t.test('adds, removals and latest match the array model', async (t) => {
  const rand = rng(11)
  const chain = new KeptChain<V>()
  const model = new ArrayModel()
  let version = 0
  let n = 0
  let bad = 0
  for (let step = 0; step < 50_000; step++) {
    const roll = rand()
    if (roll < 0.5) {
      // Mostly the next version; sometimes an older one, or one already kept.
      const v =
        rand() < 0.9
          ? ++version
          : Math.max(1, version - Math.floor(rand() * 40) + (rand() < 0.5 ? 0 : 1))
      const it = { version: v, n: n++ }
      chain.add(it)
      model.add(it)
    } else if (roll < 0.9) {
      const oldest = model.items[0]
      if (oldest) {
        chain.remove(oldest)
        model.remove(oldest)
      }
    } else if (roll < 0.95 && model.items.length > 0) {
      const it = model.items[Math.floor(rand() * model.items.length)]!
      chain.remove(it)
      model.remove(it)
    } else {
      // Something not in the chain (a second copy never indexed) is left alone.
      chain.remove({ version: version, n: -1 })
    }
    if (chain.length !== model.items.length) {
      if (bad++ < 3) t.fail(`step ${step}: length ${chain.length}, model ${model.items.length}`)
      continue
    }
    const v = Math.floor(rand() * (version + 2))
    if (chain.latest(v) !== model.latest(v) && bad++ < 3) t.fail(`step ${step}: latest(${v})`)
    if (step % 500 === 0) t.same(contents(chain), model.items, `step ${step}: the same versions`)
  }
  t.equal(bad, 0, 'every step as the model')
  t.same(contents(chain), model.items)
})

t.test('a key with a great many versions, leaving oldest first, one at a time', async (t) => {
  const chain = new KeptChain<V>()
  const all: V[] = []
  for (let v = 1; v <= 300_000; v++) {
    const it = { version: v, n: v }
    all.push(it)
    chain.add(it)
  }
  // As a window at its byte bound: each new version in, the oldest out.
  for (let v = 300_001; v <= 600_000; v++) {
    const it = { version: v, n: v }
    all.push(it)
    chain.add(it)
    chain.remove(all[v - 300_001]!)
  }
  t.equal(chain.length, 300_000)
  t.equal(chain.at(0).version, 300_001)
  t.equal(chain.at(chain.length - 1).version, 600_000)
  t.equal(chain.latest(300_000), undefined, 'nothing at or below a version that left')
  t.equal(chain.latest(450_000)?.version, 450_000)
  t.equal(chain.latest(10_000_000)?.version, 600_000)
  for (let i = 300_000; i < 600_000; i++) chain.remove(all[i]!)
  t.equal(chain.length, 0)
  t.equal(chain.latest(10_000_000), undefined)
})
