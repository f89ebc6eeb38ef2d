// Keys with characters URLs treat specially, and walking thousands of keys page by page.
import t from 'tap'
import { BadRequestError, Cairn } from '../../client/src/index.js'
import { account, nsName, server } from './helpers.js'

const byteOrder = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b))

t.test('awkward keys reach the server unchanged', async (t) => {
  const srv = await server(t)
  const { kv } = await account(srv)
  const ns = nsName('awkward')
  await kv.createNamespace(ns)
  const awkward = [
    'a/b/c',
    '/leading',
    'trailing/',
    'a//b',
    'a%2Fb',
    '100%',
    '%',
    '%zz',
    'what?',
    '?',
    'hash#tag',
    '#',
    'with space',
    ' ',
    'plus+sign',
    'amp&eq=x',
    'semi;colon,comma',
    'quote"\'`',
    'back\\slash',
    '..a',
    'a..',
    '.hidden',
    '...',
    'a/.../b',
    'emoji 🪨🔥',
    'é中文ß',
    '\u00a0nbsp',
    '<>[]{}|^~',
    'x'.repeat(512),
    'é'.repeat(256),
  ]
  for (const key of awkward) {
    await kv.put(ns, key, { key })
    const hit = await kv.get<{ key: string }>(ns, key)
    t.equal(hit?.value.key, key, `get ${JSON.stringify(key)}`)
  }
  const listed: string[] = []
  for await (const k of kv.keys(ns)) listed.push(k)
  t.same(listed, [...awkward].sort(byteOrder), 'list holds exactly these keys, in UTF-8 byte order')

  for (const key of ['a/b', '%', '?', '#', 'emoji 🪨🔥']) {
    t.same(
      (await kv.list(ns, { prefix: key })).keys,
      listed.filter((k) => k.startsWith(key)),
      `prefix ${key}`,
    )
  }
  for (const key of awkward)
    t.equal(await kv.delete(ns, key), true, `delete ${JSON.stringify(key)}`)
  t.same((await kv.list(ns)).keys, [])

  t.test('keys the server refuses', async (t) => {
    for (const key of ['x'.repeat(513), 'é'.repeat(257), 'tab\there', 'nul\u0000', 'del\u007f']) {
      await t.rejects(
        kv.put(ns, key, 1),
        { name: 'BadRequestError', status: 400, code: 'invalid_key' },
        `server refuses ${JSON.stringify(key).slice(0, 30)}`,
      )
    }
  })

  t.test('keys refused before sending', async (t) => {
    let sent = 0
    const counting = new Cairn('unused', {
      baseUrl: srv.baseUrl,
      fetch: (u, i) => {
        sent++
        return fetch(u, i)
      },
    })
    for (const key of ['', '.', '..', 'a/./b', 'a/../b', '../x', 'x/..', '\ud800']) {
      await t.rejects(counting.get(ns, key), BadRequestError, `refuses ${JSON.stringify(key)}`)
      await t.rejects(counting.put(ns, key, 1), { code: 'invalid_key' })
    }
    for (const name of ['', 'namespaces', 'usage', 'a/b', 'a.b', '-x', 'x'.repeat(65)]) {
      await t.rejects(
        counting.list(name),
        { code: 'invalid_namespace' },
        `refuses namespace ${name}`,
      )
    }
    t.equal(sent, 0, 'nothing reached the network')
  })
})

t.test('keys() walks 2,500 keys across pages', async (t) => {
  const srv = await server(t)
  const lists: string[] = []
  const { kv } = await account(srv, {
    client: {
      fetch: (url, init) => {
        if (init.method === 'GET') lists.push(url)
        return fetch(url, init)
      },
    },
  })
  const ns = nsName('many')
  await kv.createNamespace(ns)
  const want: string[] = []
  for (let i = 0; i < 2500; i++) want.push(`item:${String(i).padStart(5, '0')}`)
  want.push('other:1', 'other:2')
  let next = 0
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < want.length) {
        const key = want[next++]!
        await kv.put(ns, key, next)
      }
    }),
  )

  lists.length = 0
  const all: string[] = []
  for await (const k of kv.keys(ns)) all.push(k)
  t.equal(all.length, 2502)
  t.same(all, [...want].sort(byteOrder), 'every key once, in order')
  t.equal(lists.length, 3, 'default pages of 1000')

  lists.length = 0
  const items: string[] = []
  for await (const k of kv.keys(ns, { prefix: 'item:', pageSize: 333 })) items.push(k)
  t.equal(items.length, 2500)
  t.equal(new Set(items).size, 2500, 'no key repeats')
  t.same(items, want.slice(0, 2500))
  t.equal(lists.length, 8, '2500 keys in pages of 333')
  t.ok(
    lists.slice(1).every((u) => /[?&]cursor=/.test(u) && /[?&]prefix=item%3A/.test(u)),
    'cursor and prefix sent',
  )

  let stopped = 0
  for await (const _ of kv.keys(ns, { pageSize: 100 })) if (++stopped === 150) break
  t.equal(stopped, 150, 'breaking out of the loop stops paging')
})
