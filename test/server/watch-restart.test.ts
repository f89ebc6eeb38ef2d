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
