// Listing 5,000 keys page by page while other requests write: no key twice, no stable key
// skipped, order kept.
import t from 'tap'
import { utf8Compare } from './contract/http.js'
import { freshNamespace, setup } from './contract/setup.js'

t.test('5,000 keys, pages of 100, writes in between', async (t) => {
  const { api } = await setup(t)
  const ns = await freshNamespace(api)
  const stable = Array.from({ length: 5000 }, (_, i) => `k/${String(i).padStart(5, '0')}`)
  for (let i = 0; i < stable.length; i += 100) {
    await Promise.all(stable.slice(i, i + 100).map((k) => api.mustPut(ns, k, i)))
  }
  const seen: string[] = []
  let cursor: string | undefined
  let page = 0
  const churn: Promise<unknown>[] = []
  do {
    const q = new URLSearchParams({ limit: '100', prefix: 'k/' })
    if (cursor) q.set('cursor', cursor)
    const res = await api.get(`/${ns}?${q}`)
    t.equal(res.status, 200)
    seen.push(...res.json.keys)
    cursor = res.json.cursor
    // New keys land everywhere, some keys are deleted and written again.
    churn.push(api.mustPut(ns, `k/${String(page * 97).padStart(5, '0')}-new`, page))
    churn.push(api.mustPut(ns, `a/${page}`, page))
    churn.push(
      api
        .del(`/${ns}/k/${String(4999 - page).padStart(5, '0')}`)
        .then(() => api.mustPut(ns, `k/${String(4999 - page).padStart(5, '0')}`, 'back')),
    )
    page++
  } while (cursor && page < 200)
  await Promise.all(churn)
  t.equal(new Set(seen).size, seen.length, 'no key twice')
  const seenSet = new Set(seen)
  const stableUntouched = stable.slice(0, 5000 - page)
  t.same(
    stableUntouched.filter((k) => !seenSet.has(k)),
    [],
    'every key that existed throughout was listed',
  )
  t.same(seen, [...seen].sort(utf8Compare), 'in order')
  t.ok(page >= 50, `${page} pages`)
})
