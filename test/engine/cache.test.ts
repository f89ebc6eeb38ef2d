// The value cache: small enough to wrap around many times, it never returns another key's
// value, an overwritten value, or a deleted one.
import crypto from 'node:crypto'
import t from 'tap'
import { open } from '../../engine/index.js'
import { rng, seedFromEnv, tempDir } from './helpers.js'

t.test('a cache that wraps around many times stays exact', async (t) => {
  const seed = seedFromEnv('CAIRN_SEED')
  t.comment(`seed ${seed}`)
  const r = rng(seed)
  const db = await open(tempDir(t, 'cache'), { cacheBytes: 2 * 1024 * 1024, durability: 'none' })
  t.teardown(() => db.close())
  await db.createNamespace('c')
  const model = new Map<string, Buffer>()
  const sizes = [10, 200, 3000, 40_000, 200_000] // the largest are never cached
  for (let i = 0; i < 30_000; i++) {
    const key = `k${Math.floor(r() * 5000)}`
    const x = r()
    if (x < 0.1) {
      await db.delete('c', key)
      model.delete(key)
    } else if (x < 0.6) {
      const v = crypto.randomBytes(sizes[Math.floor(r() * r() * sizes.length)]!)
      await db.put('c', key, v)
      model.set(key, v)
    } else {
      const got = (await db.get('c', key))?.value as Buffer | undefined
      const want = model.get(key)
      if (want === undefined ? got !== undefined : !got?.equals(want)) {
        t.fail(`read ${i}: ${key} came back wrong`)
        return
      }
    }
  }
  let bad = 0
  for (const [key, want] of model)
    if (!((await db.get('c', key))?.value as Buffer | undefined)?.equals(want)) bad++
  t.equal(bad, 0, `all ${model.size} keys read back exactly`)
  const s = db.stats()
  t.ok(s.cacheHits > 0 && s.cacheMisses > 0, `hits ${s.cacheHits}, misses ${s.cacheMisses}`)
})
