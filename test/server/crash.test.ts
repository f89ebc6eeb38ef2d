// kill -9 on a real server under load: every write it acknowledged is there after a
// restart, and usage counters lose at most the last few seconds.
import t from 'tap'
import { startServer } from '../helpers/server.js'
import { Client, sleep } from './contract/http.js'
import { plansFile } from './contract/setup.js'

t.test('acknowledged writes survive SIGKILL, round after round', async (t) => {
  const srv = await startServer({ plans: plansFile() })
  t.teardown(() => srv.stop())
  const acct = await srv.createAccount()
  let api = new Client(srv.baseUrl, acct.apiKey)
  await api.createNamespace('c')
  // What GET must answer for each acknowledged key, or null once it was deleted.
  const acked = new Map<string, string | null>()
  // Deletes sent but never answered: either outcome is right, but once seen it must stay.
  const unsure = new Set<string>()
  for (let round = 0; round < 3; round++) {
    let stop = false
    let attempted = 0
    const writer = async (w: number) => {
      for (let n = 0; !stop; n++) {
        const key = `r${round}-w${w}-${n}`
        attempted++
        try {
          const value = JSON.stringify({ round, w, n, pad: 'x'.repeat(n % 200) })
          const res = await api.put(`/c/${key}`, `{"value":${value}}`)
          if (res.status === 201) acked.set(key, `{"value":${value}}`)
          // Every fifth key is deleted again, so deletes are checked too.
          if (n % 5 === 4 && res.status === 201) {
            unsure.add(key)
            const del = await api.del(`/c/${key}`)
            unsure.delete(key)
            if (del.status === 200) acked.set(key, null)
          }
        } catch {
          return // the server died under us
        }
      }
    }
    const writers = Array.from({ length: 24 }, (_, w) => writer(w))
    await sleep(600 + round * 300)
    await srv.kill()
    stop = true
    await Promise.all(writers)
    await srv.start()
    api = new Client(srv.baseUrl, acct.apiKey)
    const wrong: string[] = []
    for (const [key, text] of acked) {
      const got = await api.get(`/c/${key}`)
      if (unsure.has(key)) {
        // The delete was in flight: settle the key to what recovery found.
        unsure.delete(key)
        acked.set(key, got.status === 404 ? null : text)
        continue
      }
      if (text === null ? got.status !== 404 : got.text !== text)
        wrong.push(`${key}: ${got.status}`)
    }
    t.same(
      wrong,
      [],
      `round ${round}: all ${acked.size} acknowledged writes and deletes hold (${attempted} attempted)`,
    )
    t.ok(acked.size > 0, 'writes were acknowledged before the kill')
  }
})

t.test('usage counters survive SIGKILL up to the last few seconds', async (t) => {
  // Usage is counted per UTC day: a run across midnight would compare two days' counters.
  const toMidnight = 86_400_000 - (Date.now() % 86_400_000)
  if (toMidnight < 60_000) await sleep(toMidnight + 1000)
  const srv = await startServer({ plans: plansFile() })
  t.teardown(() => srv.stop())
  const acct = await srv.createAccount()
  const api = new Client(srv.baseUrl, acct.apiKey)
  await api.createNamespace('u')
  for (let i = 0; i < 40; i++) await api.put(`/u/k${i}`, { value: i })
  const before = (await api.get('/usage')).json.today
  await sleep(1500) // several flush intervals (250 ms in tests; 2 s by default)
  await srv.kill()
  await srv.start()
  const after = (await new Client(srv.baseUrl, acct.apiKey).get('/usage')).json.today
  t.ok(
    after.operations.put >= before.operations.put,
    `puts ${after.operations.put} >= ${before.operations.put}`,
  )
  t.ok(after.requests >= before.requests, `requests ${after.requests} >= ${before.requests}`)
})
