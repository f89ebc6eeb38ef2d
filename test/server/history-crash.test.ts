// A restore killed (SIGKILL) part way and sent again ends in the state at its point, on the
// embedded engine and (history-redis.test.ts runs it again) on Redis Cluster.
import t from 'tap'
import { Client, sleep } from './contract/http.js'
import { plansFile } from '../helpers/plans.js'
import { startServer } from '../helpers/server.js'

const srv = await startServer({ plans: plansFile() })
t.teardown(() => srv.stop())
const made = await srv.createAccount()
let api = new Client(srv.baseUrl, made.apiKey)
const KEYS = 3000

async function state(at?: string): Promise<any[]> {
  const out: any[] = []
  let cursor: string | undefined
  do {
    const q = new URLSearchParams({ include: 'values,metadata', limit: '1000' })
    if (at !== undefined && cursor === undefined) q.set('at', at)
    if (cursor) q.set('cursor', cursor)
    const res = await api.get(`/big?${q}`)
    if (res.status !== 200) throw new Error(`list: ${res.status} ${res.text}`)
    out.push(...res.json.entries.map(({ version: _v, ...e }: any) => e))
    cursor = res.json.cursor
  } while (cursor)
  return out
}

const version = async () => Number((await api.get('/big?limit=1')).json.version)

async function writeAll(value: (i: number) => unknown, skip = (_i: number) => false) {
  for (let from = 0; from < KEYS; from += 1000) {
    const ops = []
    for (let i = from; i < from + 1000; i++) {
      const key = `k${String(i).padStart(4, '0')}`
      ops.push(skip(i) ? { op: 'delete', key } : { op: 'put', key, value: value(i) })
    }
    const r = await api.post('/big', { ops })
    if (r.status !== 200) throw new Error(`write: ${r.status} ${r.text}`)
  }
}

t.test('killed part way, then sent again: the state at the point', async (t) => {
  await api.createNamespace('big')
  await writeAll((i) => ({ i }))
  const point = String(await version())
  const atPoint = await state()
  await writeAll(
    (i) => `changed ${i}`,
    (i) => i % 7 === 0,
  )
  const before = await version()
  const sent = api.post('/big?restore=1', { at: point }).catch(() => undefined)
  // Killed as soon as the restore is seen writing (or, on a fast machine, once it is done).
  let moved = before
  for (let i = 0; i < 2000 && moved === before; i++) {
    await sleep(1)
    moved = await version()
  }
  t.ok(moved > before, 'the restore was writing when the server was killed')
  await srv.kill()
  await sent
  await srv.start()
  api = new Client(srv.baseUrl, made.apiKey)
  const again = await api.post('/big?restore=1', { at: point })
  t.equal(again.status, 200, 'sent again after the restart')
  t.ok(again.json.restored <= KEYS, `it wrote what was left (${again.json.restored})`)
  t.same(await state(), atPoint, 'the namespace is as it was at the point')
  const third = await api.post('/big?restore=1', { at: point })
  t.equal(third.json.restored, 0, 'and a third time writes nothing')
})
