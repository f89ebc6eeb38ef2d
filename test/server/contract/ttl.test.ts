// TTL and expiresAt: expired keys are gone for every operation at once, listing included.
// The server runs on the test clock, so time is moved past the deadlines instead of waited
// for, and no write is late for its own deadline on a busy machine (on Redis, which keeps
// its own time, passTime waits).
import t from 'tap'
import { freshNamespace, setup } from './setup.js'

const { srv, api } = await setup(t, { testClock: true })
const ns = await freshNamespace(api)

t.test('an expired key is gone from get, list, delete and If-Match', async (t) => {
  await api.put(`/${ns}/stay`, { value: 'stays' })
  const short = await api.put(`/${ns}/short`, { value: 'short', ttl: 1 })
  t.equal(short.status, 201)
  const at = Number((await api.get(`/${ns}/short`)).headers['x-expires-at'])
  t.ok(at > 0, 'X-Expires-At is set')
  const soon = Math.floor((await srv.now()) / 1000) + 2
  t.equal((await api.put(`/${ns}/abs`, { value: 'abs', expiresAt: soon })).status, 201)
  t.equal((await api.get(`/${ns}/abs`)).headers['x-expires-at'], String(soon))

  // Past both expiry instants (and a second more, for their rounding to seconds).
  await srv.passTime((Math.max(at, soon) + 1) * 1000 - (await srv.now()))

  for (const key of ['short', 'abs']) {
    const got = await api.get(`/${ns}/${key}`)
    t.equal(got.status, 404, `${key} is gone`)
    t.equal(got.json.error.code, 'key_not_found')
    const del = await api.del(`/${ns}/${key}`)
    t.equal(del.status, 404, `${key} cannot be deleted`)
    const cond = await api.put(
      `/${ns}/${key}`,
      { value: 1 },
      { headers: { 'if-match': `"${short.json.version}"` } },
    )
    t.equal(cond.status, 412, `If-Match on expired ${key}`)
  }
  t.same((await api.get(`/${ns}`)).json.keys, ['stay'], 'expired keys are not listed')
  const recreate = await api.put(
    `/${ns}/short`,
    { value: 'again' },
    { headers: { 'if-none-match': '*' } },
  )
  t.equal(recreate.status, 201, 'an expired key counts as missing for create-only writes')
  t.equal(recreate.json.created, true)
})

t.test('a write without ttl leaves a key that does not expire', async (t) => {
  await api.put(`/${ns}/clear`, { value: 1, ttl: 3600 })
  t.ok((await api.get(`/${ns}/clear`)).headers['x-expires-at'])
  await api.put(`/${ns}/clear`, { value: 2 })
  t.equal((await api.get(`/${ns}/clear`)).headers['x-expires-at'], undefined)
})

t.test('ttl and expiresAt together are refused', async (t) => {
  const now = Math.floor(Date.now() / 1000)
  const res = await api.put(`/${ns}/both`, { value: 1, ttl: 10, expiresAt: now + 10 })
  t.equal(res.status, 400)
  t.equal(res.json.error.code, 'invalid_ttl')
})
