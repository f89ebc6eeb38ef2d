// Each namespace's history window follows its account's plan: a plan that keeps none reads
// only the present; moving the account to a plan that keeps some starts its history; a
// window given in the plans file is set at start on namespaces made before. The same on
// Redis Cluster, where the windows live in Redis (docs/redis.md, "History").
import fs from 'node:fs'
import t from 'tap'
import { Client } from './http.js'
import { cli } from './cli.js'
import { plansFile, setup } from './setup.js'

const plans = plansFile({ id: 'none', historySeconds: 0 }, { id: 'later', historySeconds: 0 })
const { srv } = await setup(t, { plans })

async function pastRead(api: Client, ns: string, value: string): Promise<number> {
  const v = await api.mustPut(ns, 'k', value)
  await api.mustPut(ns, 'k', `${value}, overwritten`)
  const r = await api.get(`/${ns}/k?at=${v}`)
  if (r.status === 200) t.equal(r.json.value, value, 'read as it was')
  else t.equal(r.json.error.code, 'history_expired')
  return r.status
}

t.test('the plan sets the window, and a change of plan moves it', async (t) => {
  const made = await srv.createAccount(undefined, { plan: 'none' })
  const api = new Client(srv.baseUrl, made.apiKey)
  await api.createNamespace('moved')
  t.equal(await pastRead(api, 'moved', 'one'), 410, 'a plan without history keeps none')
  await cli(srv, ['plan', 'set', '--email', made.email, 'free'])
  t.equal(await pastRead(api, 'moved', 'two'), 200, 'on free, history is kept')
  await api.createNamespace('fresh')
  t.equal(await pastRead(api, 'fresh', 'three'), 200, 'a new namespace too')
})

t.test('a window given in the plans file is set at start', async (t) => {
  const made = await srv.createAccount(undefined, { plan: 'later' })
  const api = new Client(srv.baseUrl, made.apiKey)
  await api.createNamespace('before')
  t.equal(await pastRead(api, 'before', 'one'), 410, 'none kept at first')
  const changed = plansFile({ id: 'none', historySeconds: 0 }, { id: 'later', historySeconds: 60 })
  fs.writeFileSync(srv.plansFile!, JSON.stringify(changed))
  await srv.restart()
  const again = new Client(srv.baseUrl, made.apiKey)
  t.equal(await pastRead(again, 'before', 'two'), 200, 'kept from the restart on')
})
