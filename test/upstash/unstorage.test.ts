// unstorage's upstash driver (unstorage/drivers/upstash, on @upstash/redis) against
// /upstash/{namespace}: items, TTLs, keys by base, clear, and the same data read through /v1.
import { createStorage } from 'unstorage'
import upstashDriver from 'unstorage/drivers/upstash'
import t from 'tap'
import { upstashSetup } from './setup.js'

const { srv, api, database } = await upstashSetup(t)

t.test('unstorage on Cairn through its upstash driver', async (t) => {
  const { ns } = await database()
  const driver = upstashDriver({ url: `${srv.url}/upstash/${ns}`, token: api.key, base: 'app' })
  const storage = createStorage({ driver })
  t.equal(await storage.hasItem('user:1'), false)
  await storage.setItem('user:1', { name: 'Ana', tags: ['a'] })
  await storage.setItem('user:2', 'Bo')
  await storage.setItem('cfg:theme', 'dark')
  await storage.setItem('count', 3)
  t.equal(await storage.hasItem('user:1'), true)
  t.same(await storage.getItem('user:1'), { name: 'Ana', tags: ['a'] })
  t.equal(await storage.getItem('user:2'), 'Bo')
  t.equal(await storage.getItem('count'), 3)
  t.equal(await storage.getItem('nope'), null)
  t.same(await storage.getItems(['user:1', 'cfg:theme', 'nope']), [
    { key: 'user:1', value: { name: 'Ana', tags: ['a'] } },
    { key: 'cfg:theme', value: 'dark' },
    { key: 'nope', value: null },
  ])
  t.same((await storage.getKeys()).sort(), ['cfg:theme', 'count', 'user:1', 'user:2'])
  t.same((await storage.getKeys('user')).sort(), ['user:1', 'user:2'])

  await storage.setItem('session', 'x', { ttl: 100 })
  const ttl = await raw(['TTL', 'app:session'])
  t.ok(ttl > 90 && ttl <= 100, `the driver's ttl is an expiry (${ttl})`)

  t.equal((await api.get(`/${ns}/app:user:2`)).text, '{"value":"Bo"}', 'the same data through /v1')

  await storage.removeItem('user:2')
  t.equal(await storage.hasItem('user:2'), false)
  // unstorage's own clear(base) passes a base to the driver only below a mount point.
  await driver.clear!('user', {})
  t.same((await storage.getKeys()).sort(), ['cfg:theme', 'count', 'session'])
  await storage.clear()
  t.same(await storage.getKeys(), [])
  t.same(await api.listAll(ns), [])

  async function raw(command: unknown[]) {
    const res = await fetch(`${srv.url}/upstash/${ns}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${api.key}` },
      body: JSON.stringify(command),
    })
    return ((await res.json()) as { result: any }).result
  }
})

t.test('many keys: the driver walks SCAN to the end', async (t) => {
  const { ns } = await database()
  const storage = createStorage({
    driver: upstashDriver({ url: `${srv.url}/upstash/${ns}`, token: api.key, scanCount: 7 }),
  })
  await Promise.all(Array.from({ length: 60 }, (_, i) => storage.setItem(`k:${i}`, i)))
  const keys = await storage.getKeys('k')
  t.equal(keys.length, 60)
  t.equal(new Set(keys).size, 60)
  t.equal(await storage.getItem('k:59'), 59)
})
