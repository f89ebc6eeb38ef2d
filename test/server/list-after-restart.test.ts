// Listings of keys read from the checkpoint at open. Their answers are copied from the
// index's bytes rather than made from strings (engine/base-keys.ts `json`), so the same
// listings are asked before and after a restart and must answer the same text: keys JSON
// escapes, keys past ASCII, prefixes, pages with cursors, both directions, and keys written
// since the restart beside those read back.
import t from 'tap'
import { plansFile } from '../helpers/plans.js'
import { startServer } from '../helpers/server.js'
import { Client, encodeKey, utf8Compare } from './contract/http.js'

const srv = await startServer({ plans: plansFile() })
t.teardown(() => srv.stop())
const acct = await srv.createAccount()
const api = () => new Client(srv.baseUrl, acct.apiKey)
await api().createNamespace('l')

const ODD = ['plain', 'quote"d', 'back\\slash', 'é', '日本', '\u{1F600}', 'tab~', 'x']
const keys: string[] = []
for (let i = 0; i < 240; i++) keys.push(`${'pq'[i % 2]}${i % 7}/${ODD[i % ODD.length]}${i}`)
for (const k of keys) {
  const res = await api().put(`/l/${encodeKey(k)}`, { value: 1 })
  if (res.status !== 201) throw new Error(`PUT ${k}: ${res.status} ${res.text}`)
}

const LISTINGS = [
  '',
  'limit=7',
  'prefix=p3%2F&limit=5',
  'prefix=q&limit=11&reverse=1',
  'prefix=p&limit=1000',
  'prefix=zz',
  'reverse=1&limit=13',
]

/** Each listing's answers, every page of it followed by its cursor, as raw text. */
async function answers(): Promise<string[]> {
  const out: string[] = []
  for (const q of LISTINGS) {
    let cursor: string | undefined
    do {
      const res = await api().get(`/l?${q}${cursor ? `&cursor=${cursor}` : ''}`)
      if (res.status !== 200) throw new Error(`list ${q}: ${res.status} ${res.text}`)
      out.push(`${q}: ${res.text.replace(/,"version":"\d+"/, '')}`)
      cursor = res.json.cursor
    } while (cursor)
  }
  return out
}

t.test('a restart changes no listing', async (t) => {
  const before = await answers()
  const all = JSON.parse(before[0]!.slice(2)).keys
  t.same(all, [...keys].sort(utf8Compare), 'every key, in UTF-8 order')
  await srv.restart()
  const after = await answers()
  t.equal(after.length, before.length, 'as many pages')
  let differ = 0
  for (let i = 0; i < before.length; i++) {
    if (before[i] !== after[i] && differ++ < 3) t.equal(after[i], before[i], 'the same text')
  }
  t.equal(differ, 0, `all ${before.length} pages answer the same text`)
})

t.test('keys written since the restart list beside those read back', async (t) => {
  const more = ['p3/new"one', 'p3/0', 'q5/日本new']
  for (const k of more) t.equal((await api().put(`/l/${encodeKey(k)}`, { value: 2 })).status, 201)
  t.equal((await api().del(`/l/${encodeKey(keys[3]!)}`)).status, 200)
  const want = [...keys.filter((k) => k !== keys[3]), ...more].sort(utf8Compare)
  t.same(await api().listAll('l', '', 9), want, 'every key, in pages of 9')
  t.same(
    await api().listAll('l', 'p3/', 2),
    want.filter((k) => k.startsWith('p3/')),
    'a prefix, in pages of 2',
  )
  const entries = await api().get('/l?prefix=q5%2F&include=values&limit=1000')
  t.same(
    entries.json.entries.map((e: { key: string }) => e.key),
    want.filter((k) => k.startsWith('q5/')),
    'entries too',
  )
})
