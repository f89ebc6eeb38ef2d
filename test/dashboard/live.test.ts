// The data browser's additions in a real browser: versions and expiry in the key list,
// metadata shown and edited (with the value, or on its own with the expiry), deleting by
// prefix behind a typed confirmation, and the live view, which follows changes another
// client makes through /v1, counts as a watch, and gives its watch back when the page is left.
import t from 'tap'
import { startServer } from '../helpers/server.js'
import {
  launch,
  newContext,
  open,
  pageErrors,
  ready,
  shoot,
  signUp,
  skip,
  uniqueEmail,
  v1,
} from './helpers.js'

t.test('the data browser: metadata, versions, prefixes and the live view', { skip }, async (t) => {
  const srv = await startServer()
  t.teardown(() => srv.stop())
  const base = srv.url
  const browser = await launch(t)
  const context = await newContext(browser, base)
  const page = await context.newPage()
  const errors = pageErrors(page)
  const key = await signUp(page, base, uniqueEmail('live'))
  const editor = page.locator('#editor')
  const metaBox = editor.getByLabel('Metadata (JSON object)')
  const row = (k: string) => page.locator(`#key-list tr[data-key="${k}"]`)

  t.equal((await v1(base, key, 'POST', '/namespaces', { name: 'shop' })).status, 201)
  const put = async (k: string, body: unknown) => {
    const res = await v1(base, key, 'PUT', `/shop/${k}`, body)
    if (res.status !== 200 && res.status !== 201) throw new Error(`PUT ${k}: ${res.text}`)
    return res.body.version as string
  }
  await put('cart/1', { value: { items: 2 }, metadata: { owner: 'ada' } })
  const v2 = await put('cart/2', { value: 'soon gone', ttl: 3600 })
  const v1again = await put('cart/1', { value: { items: 3 }, metadata: { owner: 'ada' } })

  await t.test('the key list shows each key’s version and expiry', async (t) => {
    await open(page, `${base}/namespaces/shop`)
    await row('cart/1').waitFor()
    t.equal(await row('cart/1').locator('td').nth(1).textContent(), v1again, 'version of cart/1')
    t.equal(await row('cart/1').locator('td').nth(2).textContent(), 'Never', 'no expiry')
    t.equal(await row('cart/2').locator('td').nth(1).textContent(), v2, 'version of cart/2')
    t.match(await row('cart/2').locator('td').nth(2).textContent(), /^in (59|60) min$/)
    const when = Number(
      new Date((await row('cart/2').locator('time').getAttribute('datetime')) ?? '').getTime(),
    )
    const expires = Number((await v1(base, key, 'GET', '/shop/cart/2')).headers.get('x-expires-at'))
    t.equal(when, expires * 1000, 'the exact expiry is in the markup')
    t.same(
      await page.locator('#key-list thead th').allTextContents(),
      ['Key', 'Version', 'Expires'],
      'the columns have headers',
    )
  })

  await t.test('metadata is shown and saved with the value', async (t) => {
    await page.locator('.key-item[data-key="cart/1"]').click()
    await page.locator('#editor-title', { hasText: 'cart/1' }).waitFor()
    t.equal(await metaBox.inputValue(), '{\n  "owner": "ada"\n}', 'formatted for reading')
    await metaBox.fill('{\n  "owner": "grace",\n  "tags": ["vip", 10000000000000000001]\n}')
    const reopened = page.waitForResponse(
      (r) => r.url().includes('/value?') && r.request().method() === 'GET',
    )
    await page.getByRole('button', { name: 'Save', exact: true }).click()
    await reopened
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(r)))
    await row('cart/1')
      .locator('td', { hasText: String(Number(v1again) + 1) })
      .waitFor()
    const got = await v1(base, key, 'GET', '/shop/cart/1?metadata=1')
    t.equal(
      got.text,
      '{"value":{"items":3},"metadata":{"owner":"grace","tags":["vip",10000000000000000001]}}',
      'kept exactly, without the whitespace typed',
    )
    await shoot(page, 'browser-metadata')
  })

  await t.test('metadata that is not an object, or too large, is refused clearly', async (t) => {
    const before = (await v1(base, key, 'GET', '/shop/cart/1?metadata=1')).text
    await metaBox.fill('["not", "an", "object"]')
    await page.getByRole('button', { name: 'Save', exact: true }).click()
    await t.resolves(
      editor.locator('.field-error', { hasText: /^Metadata is a JSON object/ }).waitFor(),
    )
    t.equal(await metaBox.getAttribute('aria-invalid'), 'true', 'the field is marked invalid')

    // The server's own rule (1 KiB) comes back on the field too.
    await metaBox.fill(JSON.stringify({ note: 'x'.repeat(1100) }))
    t.equal(await metaBox.getAttribute('aria-invalid'), null, 'typing a fix clears the error')
    const saved = page.waitForResponse((r) => r.request().method() === 'PUT')
    await page.getByRole('button', { name: 'Save', exact: true }).click()
    t.equal((await saved).status(), 400)
    await t.resolves(editor.locator('.field-error', { hasText: /at most 1024 are kept/ }).waitFor())
    t.equal(await metaBox.getAttribute('aria-invalid'), 'true')
    t.equal(
      await page.evaluate(() => document.activeElement?.getAttribute('name')),
      'metadata',
      'focus goes to the field to fix',
    )
    t.equal((await v1(base, key, 'GET', '/shop/cart/1?metadata=1')).text, before, 'unchanged')
  })

  await t.test('metadata and expiry change without resending the value', async (t) => {
    // The editor already shows cart/1: wait for the value read again, not just the title.
    const opened = page.waitForResponse(
      (r) => r.url().includes('/value?') && r.request().method() === 'GET',
    )
    await page.locator('.key-item[data-key="cart/1"]').click()
    await opened
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(r)))
    await metaBox.fill('{"owner": "lin"}')
    // Whatever is typed in the value is not sent.
    await editor.getByLabel('Value (JSON)').fill('"not sent"')
    await page.getByLabel('Seconds until the key expires').fill('120')
    const patched = page.waitForResponse((r) => r.request().method() === 'PATCH')
    await page.getByRole('button', { name: 'Update metadata and expiry only' }).click()
    const res = await patched
    t.equal(res.status(), 200)
    t.equal(res.request().postData(), '{"metadata":{"owner":"lin"},"ttl":120}')
    await page.getByText(/^Keep the current expiry/).waitFor()
    const got = await v1(base, key, 'GET', '/shop/cart/1?metadata=1')
    t.equal(got.text, '{"value":{"items":3},"metadata":{"owner":"lin"}}')
    const expires = Number(got.headers.get('x-expires-at'))
    const now = Date.now() / 1000
    t.ok(expires > now + 100 && expires <= now + 121, 'expires in about two minutes')
    t.equal(await editor.getByLabel('Value (JSON)').inputValue(), '{\n  "items": 3\n}')

    // Emptying the field removes the metadata; "never" removes the expiry.
    await metaBox.fill('')
    await page.getByLabel('Never expires').check()
    await page.getByRole('button', { name: 'Update metadata and expiry only' }).click()
    await page.getByText(/^Keep the current expiry/).waitFor({ state: 'hidden' })
    const after = await v1(base, key, 'GET', '/shop/cart/1?metadata=1')
    t.equal(after.text, '{"value":{"items":3},"metadata":null}')
    t.equal(after.headers.get('x-expires-at'), null)
    t.equal(await row('cart/1').locator('td').nth(2).textContent(), 'Never')
  })

  await t.test('deleting by prefix needs the prefix typed again', async (t) => {
    for (const k of ['tmp/a', 'tmp/b', 'tmp/c', 'tmpx']) await put(k, { value: k })
    await open(page, `${base}/namespaces/shop?prefix=tmp%2F`)
    await row('tmp/c').waitFor()
    await page.getByRole('button', { name: 'Delete by prefix…' }).click()
    const dialog = page.getByRole('dialog')
    const go = dialog.getByRole('button', { name: 'Delete keys' })
    t.equal(await dialog.getByLabel('Prefix', { exact: true }).inputValue(), 'tmp/', 'the search')
    t.ok(await go.isDisabled(), 'not before the prefix is typed again')
    await dialog.getByLabel('Type the prefix again to confirm').fill('tmp')
    t.ok(await go.isDisabled(), 'nor when it differs')
    await dialog.getByLabel('Type the prefix again to confirm').fill('tmp/')
    t.ok(await go.isEnabled())
    await shoot(page, 'browser-delete-prefix')
    await go.click()
    await t.resolves(
      page
        .getByRole('status')
        .filter({ hasText: 'Deleted 3 keys starting with “tmp/”.' })
        .waitFor(),
    )
    await row('tmp/a').waitFor({ state: 'detached' })
    t.same((await v1(base, key, 'GET', '/shop?prefix=tmp/')).body.keys, [])
    t.equal((await v1(base, key, 'GET', '/shop/tmpx')).status, 200, 'other keys stay')

    // The endpoint itself refuses without the confirmation, and never takes an empty prefix.
    const call = (query: string, body: unknown) =>
      page.evaluate(
        async ([q, b]) => {
          const token = document.querySelector<HTMLMetaElement>('meta[name="csrf-token"]')!.content
          const res = await fetch(`/dashboard/api/namespaces/shop/keys?${q}`, {
            method: 'DELETE',
            headers: { 'content-type': 'application/json', 'x-csrf-token': token },
            body: JSON.stringify(b),
          })
          return { status: res.status, body: await res.json() }
        },
        [query, body] as const,
      )
    const unconfirmed = await call('prefix=cart%2F', {})
    t.equal(unconfirmed.status, 400)
    t.match(unconfirmed.body.error.message, /Type the prefix again/)
    t.equal((await call('prefix=', { confirm: '' })).body.error.code, 'invalid_prefix')
    t.equal((await v1(base, key, 'GET', '/shop?prefix=cart/')).body.keys.length, 2, 'nothing went')
  })

  await t.test('the live view follows changes made through /v1', async (t) => {
    await open(page, `${base}/namespaces/shop?prefix=cart%2F`)
    await row('cart/1').waitFor()
    await page.getByLabel('Live updates').check()
    await t.resolves(page.locator('#live-status', { hasText: /^Live: watching keys/ }).waitFor())
    t.match(page.url(), /live=1/, 'kept in the address, so a reload keeps it')

    const created = await put('cart/3', { value: 'new' })
    await row('cart/3').waitFor()
    t.equal(await row('cart/3').locator('td').nth(1).textContent(), created, 'with its version')
    t.same(
      await page.locator('.key-item').allTextContents(),
      ['cart/1', 'cart/2', 'cart/3'],
      'in key order',
    )
    await put('other/1', { value: 'outside the prefix' })

    const changed = await put('cart/1', { value: 'changed', ttl: 600 })
    await row('cart/1').locator('td', { hasText: changed }).waitFor()
    t.match(await row('cart/1').locator('td').nth(2).textContent(), /^in (9|10) min$/)

    t.equal((await v1(base, key, 'DELETE', '/shop/cart/3')).status, 200)
    await row('cart/3').waitFor({ state: 'detached' })
    t.equal(await row('other/1').count(), 0, 'keys outside the prefix never show')

    // The open key changing elsewhere is pointed out in the editor.
    await page.locator('.key-item[data-key="cart/2"]').click()
    await page.locator('#editor-title', { hasText: 'cart/2' }).waitFor()
    await put('cart/2', { value: 'elsewhere' })
    await t.resolves(editor.getByRole('status').filter({ hasText: 'changed elsewhere' }).waitFor())
    await shoot(page, 'browser-live')

    // Counted as /v1 counts a watch: one request when it opens, its events apart.
    const usage = (await v1(base, key, 'GET', '/usage')).body.today
    t.ok(usage.operations.watch >= 1, `watches opened: ${usage.operations.watch}`)
    t.ok(usage.watchEvents >= 4, `watch events: ${usage.watchEvents}`)
  })

  await t.test('leaving the page gives the watch back', async (t) => {
    const reload = page.waitForResponse((r) => r.url().includes('/watch?'))
    await page.reload()
    await ready(page)
    await reload
    await t.resolves(page.locator('#live-status', { hasText: /^Live:/ }).waitFor(), 'reopened')
    await open(page, `${base}/namespaces`)
    // The free plan allows 5 watches at once: all 5 are free again, and a 6th is refused.
    const cookie = (await context.cookies()).map((c) => `${c.name}=${c.value}`).join('; ')
    const held: AbortController[] = []
    t.teardown(() => {
      for (const a of held) a.abort()
    })
    const watch = async () => {
      const ac = new AbortController()
      held.push(ac)
      const res = await fetch(`${base}/dashboard/api/namespaces/shop/watch`, {
        headers: { cookie, referer: `${base}/namespaces/shop`, accept: 'text/event-stream' },
        signal: ac.signal,
      })
      return res
    }
    let statuses: number[] = []
    // The server learns of the closed page when its connection drops: give it a moment.
    for (let tries = 0; tries < 20; tries++) {
      for (const a of held.splice(0)) a.abort()
      statuses = []
      for (let i = 0; i < 5; i++) statuses.push((await watch()).status)
      if (statuses.every((s) => s === 200)) break
      await new Promise((r) => setTimeout(r, 100))
    }
    t.same(statuses, [200, 200, 200, 200, 200], 'the page’s watch was given back')
    const sixth = await watch()
    t.equal(sixth.status, 429)
    t.equal(((await sixth.json()) as any).error.code, 'watch_limit')
    const foreign = await fetch(`${base}/dashboard/api/namespaces/shop/watch`, {
      headers: { cookie, 'sec-fetch-site': 'cross-site', referer: 'https://evil.example/' },
    })
    t.equal(foreign.status, 403, 'another site cannot open one with the cookie')
    for (const a of held.splice(0)) a.abort()
  })

  await t.test('a dropped watch resumes after the last event it had (Last-Event-ID)', async (t) => {
    // What EventSource sends when it reconnects: the id of the last event it received.
    const cookie = (await context.cookies()).map((c) => `${c.name}=${c.value}`).join('; ')
    const last = (await v1(base, key, 'GET', '/shop?limit=1')).body.version as string
    await put('resume/1', { value: 1 })
    await put('elsewhere', { value: 0 })
    const second = await put('resume/2', { value: 2, metadata: { n: 2 } })
    const ac = new AbortController()
    t.teardown(() => ac.abort())
    const res = await fetch(
      `${base}/dashboard/api/namespaces/shop/watch?prefix=resume%2F&since=0`,
      {
        headers: { cookie, referer: `${base}/namespaces/shop`, 'last-event-id': last },
        signal: ac.signal,
      },
    )
    t.equal(res.status, 200)
    t.match(res.headers.get('content-type'), /^text\/event-stream/)
    const reader = res.body!.getReader()
    let text = ''
    const until = Date.now() + 10_000
    while (!text.includes('"resume/2"') && Date.now() < until) {
      const { value, done } = await reader.read()
      if (done) break
      text += Buffer.from(value).toString('utf8')
    }
    ac.abort()
    const events = text
      .split('\n\n')
      .filter((e) => e.startsWith('event:'))
      .map((e) => e.split('\n'))
    t.same(
      events,
      [
        ['event: progress', `id: ${last}`, `data: {"version":"${last}"}`],
        [
          'event: put',
          `id: ${Number(last) + 1}`,
          `data: {"key":"resume/1","version":"${Number(last) + 1}","value":1}`,
        ],
        [
          'event: put',
          `id: ${second}`,
          `data: {"key":"resume/2","version":"${second}","value":2,"metadata":{"n":2}}`,
        ],
      ],
      'every change after it, in the prefix, none twice',
    )
    const bad = await fetch(`${base}/dashboard/api/namespaces/shop/watch`, {
      headers: { cookie, referer: `${base}/namespaces/shop`, 'last-event-id': 'x' },
    })
    t.equal(bad.status, 400, 'a Last-Event-ID that is not a version is refused')
  })

  await t.test('the overview shows the new operations and watch events', async (t) => {
    await open(page, `${base}/`)
    const cells = (op: string) => page.locator(`#ops-today tr[data-op="${op}"] td`)
    t.equal(
      await cells('patch').first().textContent(),
      '0',
      'the dashboard’s own edits are not API requests',
    )
    const watches = Number(await cells('watch').first().textContent())
    t.ok(watches >= 6, `watches opened today: ${watches}`)
    t.same(await page.locator('#ops-today tbody th').allTextContents(), [
      'Reads',
      'Writes',
      'Deletes',
      'Lists',
      'Namespace calls',
      'Usage calls',
      'Patches',
      'Transaction ops',
      'Prefix deletes',
      'Watches opened',
    ])
    const events = page
      .locator('#today-table tr', { hasText: 'Watch events delivered' })
      .locator('td')
    t.ok(Number(await events.textContent()) >= 4, 'today’s watch events')
    // One /v1 transaction of two ops counts as two.
    t.equal(
      (
        await v1(base, key, 'POST', '/shop', {
          ops: [
            { op: 'put', key: 'tx/1', value: 1 },
            { op: 'increment', key: 'tx/2', by: 5 },
          ],
        })
      ).status,
      200,
    )
    t.equal((await v1(base, key, 'PATCH', '/shop/tx/2', { increment: 1 })).status, 200)
    t.equal((await v1(base, key, 'DELETE', '/shop?prefix=tx/')).status, 200)
    await page.reload()
    await ready(page)
    t.equal(await cells('transaction').first().textContent(), '2')
    t.equal(await cells('patch').first().textContent(), '1')
    t.equal(await cells('deletePrefix').first().textContent(), '1')
    await shoot(page, 'overview-operations')
  })

  t.same(errors, [], 'no script errors')
})
