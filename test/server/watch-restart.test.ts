// A watch resumes across a restart of the embedded server, with no gap and no repeat: after a
// clean stop and after kill -9 (the history is read back from the log). On Redis Cluster the
// same holds across front ends (test/store/two-front-ends.test.ts).
import t from 'tap'
import { Client } from './contract/http.js'
import { watch } from './contract/sse.js'
import { startServer } from '../helpers/server.js'

const srv = await startServer()
t.teardown(() => srv.stop())
const acct = await srv.createAccount()
const api = () => new Client(srv.baseUrl, acct.apiKey)
await api().createNamespace('r')

const writes = async (from: number, to: number) => {
  for (let i = from; i <= to; i++) await api().mustPut('r', `k${i % 4}`, i)
}

for (const how of ['restart', 'kill -9'] as const) {
  t.test(`resume after ${how}`, async (t) => {
    const first = Number((await api().get('/r')).json.version)
    const w = await watch(srv.baseUrl, `/r?watch=1&since=${first}`, acct.apiKey)
    await writes(1, 6)
    const seen = await w.until(7)
    w.close()
    const last = seen.at(-1)!.id!
    t.equal(Number(last), first + 6)
    // More writes the watcher does not see, then the server goes away.
    await writes(7, 9)
    if (how === 'restart') await srv.restart()
    else {
      await srv.kill()
      await srv.start()
    }
    const again = await watch(srv.baseUrl, '/r?watch=1', acct.apiKey, { 'last-event-id': last })
    t.teardown(() => again.close())
    await writes(10, 11)
    const resumed = await again.until(6)
    t.same(
      resumed.map((e) => Number(e.id)),
      [0, 1, 2, 3, 4, 5].map((i) => Number(last) + i),
      'progress at the last event seen, then every later change once, in order',
    )
    t.same(
      resumed.slice(1).map((e) => e.data.value),
      [7, 8, 9, 10, 11],
    )
  })
}

// Compaction rewrites the segments that held the changes, dropping the overwritten ones and
// copying the rest among older data: the recent ones stay readable (engine/history-file.ts).
for (const how of ['restart', 'kill -9'] as const) {
  t.test(`resume from the first version after a compaction and a ${how}`, async (t) => {
    const ns = `c-${how === 'restart' ? 'r' : 'k'}`
    await api().createNamespace(ns)
    const from = Number((await api().get(`/${ns}`)).json.version)
    for (let i = 1; i <= 12; i++) await api().mustPut(ns, `k${i % 3}`, i)
    t.equal((await api().del(`/${ns}/k0`)).status, 200, 'a delete')
    await srv.operator('compact', {})
    if (how === 'restart') await srv.restart()
    else {
      await srv.kill()
      await srv.start()
    }
    const again = await watch(srv.baseUrl, `/${ns}?watch=1&since=${from}`, acct.apiKey)
    t.teardown(() => again.close())
    const resumed = await again.until(14)
    t.same(
      resumed.map((e) => Number(e.id)),
      Array.from({ length: 14 }, (_, i) => from + i),
      'progress at the version asked for, then every change since, overwritten ones too',
    )
    t.same(
      resumed.slice(1).map((e) => (e.event === 'delete' ? 'deleted' : e.data.value)),
      [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 'deleted'],
    )
  })
}
