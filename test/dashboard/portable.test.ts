// A namespace's export, import and restores from the dashboard, in a real browser on a real
// server: the download is byte for byte /v1's export, an upload shows its progress and lands
// in the namespace (as /v1 then reads it), a bad line is named and nothing applies, Replace
// deletes what the file lacks; a key's History tab restores a version, and "Restore to a
// point in time" previews exactly the count the restore then writes, writing nothing itself.
import fs from 'node:fs'
import type { Page } from 'playwright-core'
import t from 'tap'
import { open, shoot, signedIn, skip, v1 } from './helpers.js'

/** Run again on Redis Cluster by portable-on-redis.test.ts. */

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** The export's lines, its header's exportedAt dropped (the one thing two exports differ in). */
function comparable(ndjson: string): string[] {
  const lines = ndjson.split('\n')
  const head = JSON.parse(lines[0]!)
  delete head.exportedAt
  return [JSON.stringify(head), ...lines.slice(1)]
}

/** Whether the focused element is inside the open dialog. */
const focusInDialog = (page: Page) =>
  page.evaluate(() => document.activeElement?.closest('dialog[open]') != null)

/** The namespace's live keys and its version, through /v1. */
async function countOf(base: string, key: string, ns: string) {
  const r = await v1(base, key, 'GET', `/${ns}?count=1`)
  return { count: r.body.count as number, version: r.body.version as string }
}

async function put(base: string, key: string, ns: string, k: string, body: unknown) {
  const r = await v1(base, key, 'PUT', `/${ns}/${encodeURIComponent(k)}`, body)
  if (r.status !== 200 && r.status !== 201) throw new Error(`PUT ${k}: ${r.status} ${r.text}`)
}

t.test('export, import and restore from the dashboard', { skip }, async (t) => {
  const { base, page, errors, key } = await signedIn(t, 'portable')
  for (const ns of ['source', 'target', 'pit'])
    t.equal((await v1(base, key, 'POST', '/namespaces', { name: ns })).status, 201)
  await put(base, key, 'source', 'big', '{"value":{"n":12345678901234567890,"z":1,"a":2}}')
  await put(base, key, 'source', 'meta', { value: 'tagged', metadata: { owner: 'ada' } })
  await put(base, key, 'source', 'soon', { value: [1, 2, 3], ttl: 3600 })
  await put(base, key, 'source', 'ünï', { value: 'text' })

  await t.test('Export downloads exactly what /v1 exports', async (t) => {
    await open(page, `${base}/namespaces/source`)
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Export', exact: true }).click(),
    ])
    t.equal(download.suggestedFilename(), 'source.ndjson', 'named for the namespace')
    const got = fs.readFileSync((await download.path())!, 'utf8')
    const api = await v1(base, key, 'GET', '/source?export=1')
    t.equal(api.status, 200)
    t.same(comparable(got), comparable(api.text), 'the same lines, byte for byte')
    t.match(got, /"n":12345678901234567890,"z":1,"a":2/, 'values exact')
    t.match(got.trimEnd().split('\n').at(-1), /^\{"end":true,"entries":4\}$/, 'ends whole')
  })

  const dialog = page.getByRole('dialog')

  await t.test('Import uploads a file with its progress, and the data is there', async (t) => {
    await open(page, `${base}/namespaces/target`)
    // Opened from the keyboard: focus moves into the dialog.
    await page.locator('#import').focus()
    await page.keyboard.press('Enter')
    await dialog.waitFor()
    t.ok(await focusInDialog(page), 'focus is in the dialog')
    const lines: string[] = []
    const value = 'x'.repeat(2000)
    for (let i = 0; i < 2000; i++)
      lines.push(JSON.stringify({ key: `item/${String(i).padStart(4, '0')}`, value: { i, value } }))
    const file = Buffer.from(`${lines.join('\n')}\n`)
    t.ok(file.length > 4_000_000, 'a file of a few MB')
    await dialog.getByLabel('Import file').setInputFiles({
      name: 'items.ndjson',
      mimeType: 'application/x-ndjson',
      buffer: file,
    })
    t.ok(await dialog.getByLabel('Merge').isChecked(), 'Merge is the default')
    // The bar's values as the page shows them, sampled on every frame while it uploads.
    // (A string: the suite also runs under tsx, whose names for inner functions the page lacks.)
    await page.evaluate(`(() => {
      const seen = []
      window.progressSeen = seen
      const bar = document.querySelector('#import-progress')
      const look = () => {
        if (!bar.hidden) seen.push([bar.value, bar.max])
        if (seen.length < 100000) requestAnimationFrame(look)
      }
      look()
    })()`)
    await dialog.getByRole('button', { name: 'Import', exact: true }).click()
    const status = dialog.getByRole('status')
    await status.filter({ hasText: '2000 imported' }).waitFor({ timeout: 30_000 })
    const bar = dialog.getByRole('progressbar', { name: 'Import progress' })
    t.ok(await bar.isVisible(), 'the named progress bar shows')
    const seen: number[][] = await page.evaluate(() => (window as any).progressSeen)
    t.ok(seen.length > 0, 'the bar was seen while the upload went')
    t.ok(
      seen.some(([v]) => v! > 0),
      'with a value past zero',
    )
    t.equal(
      await bar.evaluate((b: HTMLProgressElement) => b.value),
      file.length,
      'ending at the size of the file (its max)',
    )
    t.equal(await bar.evaluate((b: HTMLProgressElement) => b.max), file.length)
    t.equal((await countOf(base, key, 'target')).count, 2000, '/v1 counts every entry')
    const one = await v1(base, key, 'GET', '/target/item%2F1234')
    t.same(one.body.value, { i: 1234, value }, 'and reads what the file held')
    await shoot(page, 'import-dialog')
    await page.keyboard.press('Escape')
    await dialog.waitFor({ state: 'detached' })
  })

  await t.test('a bad line is named and nothing is applied', async (t) => {
    const before = await countOf(base, key, 'target')
    await page.locator('#import').click()
    t.ok(await focusInDialog(page), 'focus is in the dialog')
    const body = [
      '{"cairn":"export","format":1}',
      '{"key":"new/a","value":1}',
      '{"key":"new/b","value":2}',
      '{"key":"new/c"}',
      '{"key":"new/d","value":4}',
      // Megabytes after it: the refusal comes as soon as line 4 is in, the rest unread.
      ...Array.from({ length: 1500 }, (_, i) =>
        JSON.stringify({ key: `new/${i}`, value: 'y'.repeat(2000) }),
      ),
    ].join('\n')
    await dialog.getByLabel('Import file').setInputFiles({
      name: 'bad.ndjson',
      mimeType: 'application/x-ndjson',
      buffer: Buffer.from(body),
    })
    await dialog.getByRole('button', { name: 'Import', exact: true }).click()
    const alert = dialog.getByRole('alert').filter({ hasText: 'Line 4' })
    await alert.waitFor()
    t.match(await alert.textContent(), /^Line 4: .*Nothing was imported\.$/)
    t.same(await countOf(base, key, 'target'), before, 'the namespace is as it was')
    t.equal((await v1(base, key, 'GET', '/target/new%2Fa')).status, 404, 'no line applied')
    await page.keyboard.press('Escape')
    await dialog.waitFor({ state: 'detached' })
  })

  await t.test('Replace leaves exactly the file’s entries', async (t) => {
    await page.locator('#import').click()
    await dialog.getByLabel('Import file').setInputFiles({
      name: 'two.ndjson',
      mimeType: 'application/x-ndjson',
      buffer: Buffer.from('{"key":"only/1","value":1}\n{"key":"only/2","value":2}\n'),
    })
    await dialog.getByLabel('Replace').check()
    await dialog.getByRole('button', { name: 'Import', exact: true }).click()
    await dialog.getByRole('status').filter({ hasText: '2 imported, 2000 deleted' }).waitFor()
    const listed = await v1(base, key, 'GET', '/target')
    t.same(listed.body.keys, ['only/1', 'only/2'], '/v1 lists only the imported keys')
    await page.keyboard.press('Escape')
    await dialog.waitFor({ state: 'detached' })
    await page.locator('.key-item[data-key="only/1"]').waitFor()
    t.equal(await page.locator('.key-item').count(), 2, 'the list shows them')
  })

  await t.test('a key’s History tab restores a version', async (t) => {
    for (const n of [1, 2, 3]) await put(base, key, 'source', 'doc', { value: { n } })
    await put(base, key, 'source', 'gone', { value: 'first' })
    t.equal((await v1(base, key, 'DELETE', '/source/gone')).status, 200)
    await put(base, key, 'source', 'gone', { value: 'again' })
    const versions = (await v1(base, key, 'GET', '/source/doc?history=1')).body.versions
    await open(page, `${base}/namespaces/source`)
    await page.locator('.key-item[data-key="doc"]').click()
    const tab = page.getByRole('tab', { name: 'History' })
    await tab.click()
    t.equal(await tab.getAttribute('aria-selected'), 'true')
    const rows = page.locator('#history-list tbody tr')
    await rows.nth(2).waitFor()
    t.equal(await rows.count(), 3, 'three versions')
    t.same(
      await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-version'))),
      versions.map((v: { version: string }) => v.version),
      'newest first, as /v1 lists them',
    )
    t.match(await rows.nth(0).textContent(), /\(current\).*UTC\{"n":3\}/)
    t.match(await rows.nth(2).textContent(), /\{"n":1\}Restore this version/)
    t.equal(await rows.nth(0).getByRole('button').count(), 0, 'the current one has no restore')
    await shoot(page, 'key-history')
    await rows.nth(2).getByRole('button', { name: 'Restore this version' }).click()
    await rows.nth(3).waitFor()
    t.same((await v1(base, key, 'GET', '/source/doc')).body.value, { n: 1 }, '/v1 reads it back')
    t.equal(await rows.count(), 4, 'as a new version')
    t.match(await rows.nth(0).textContent(), /\(current\).*\{"n":1\}/)

    // A version that was a delete is listed as deleted, and restoring it deletes the key.
    await page.locator('.key-item[data-key="gone"]').click()
    // The list shows "doc"'s versions until "gone"'s arrive: wait for one of "gone"'s own.
    await page.locator('#history-list tbody tr', { hasText: '"first"' }).waitFor()
    const deleted = rows.nth(1)
    t.match(await deleted.textContent(), /Deleted/)
    t.match(await rows.nth(2).textContent(), /"first"/)
    await deleted.getByRole('button', { name: 'Restore this version' }).click()
    await page.locator('.key-item[data-key="gone"]').waitFor({ state: 'detached' })
    t.equal((await v1(base, key, 'GET', '/source/gone')).status, 404, 'deleted again')
  })

  await t.test('Restore to a point in time previews, writes nothing, then restores', async (t) => {
    for (let i = 0; i < 20; i++)
      await put(base, key, 'pit', `k${String(i).padStart(2, '0')}`, { value: i })
    // The point: the next whole second after those writes; every change below comes later.
    const at = Math.ceil(Date.now() / 1000) * 1000
    await sleep(at - Date.now() + 50)
    const thenListed = (await v1(base, key, 'GET', '/pit?include=values')).body.entries
    for (let i = 0; i < 10; i++)
      await put(base, key, 'pit', `k${String(i).padStart(2, '0')}`, { value: `changed ${i}` })
    for (const k of ['k10', 'k11'])
      t.equal((await v1(base, key, 'DELETE', `/pit/${k}`)).status, 200)
    await put(base, key, 'pit', 'later', { value: 'new' })
    const before = await countOf(base, key, 'pit')
    const when = new Date(at).toISOString().slice(0, 19)

    await open(page, `${base}/namespaces/pit`)
    await page.getByRole('button', { name: 'Restore to a point in time' }).click()
    await dialog.waitFor()
    t.ok(await focusInDialog(page), 'focus is in the dialog')
    await dialog.getByLabel('Restore to').fill(when)
    t.equal(await dialog.getByLabel('Prefix').inputValue(), '')
    t.ok(
      await dialog.getByRole('button', { name: 'Restore', exact: true }).isDisabled(),
      'Restore waits for a preview',
    )
    await dialog.getByRole('button', { name: 'Preview' }).click()
    await dialog.getByRole('status').filter({ hasText: '13 keys will change' }).waitFor()
    t.same(await countOf(base, key, 'pit'), before, 'the preview wrote nothing')
    await page.keyboard.press('Escape')
    await dialog.waitFor({ state: 'detached' })
    t.same(await countOf(base, key, 'pit'), before, 'Escape applied nothing')

    await page.getByRole('button', { name: 'Restore to a point in time' }).click()
    await dialog.getByLabel('Restore to').fill(when)
    await dialog.getByRole('button', { name: 'Preview' }).click()
    await dialog.getByRole('status').filter({ hasText: '13 keys will change' }).waitFor()
    await shoot(page, 'restore-point')
    await dialog.getByRole('button', { name: 'Restore', exact: true }).click()
    await dialog.getByRole('status').filter({ hasText: '13 keys restored' }).waitFor()
    const after = await countOf(base, key, 'pit')
    t.equal(Number(after.version) > Number(before.version), true, 'the restore wrote')
    t.same(
      (await v1(base, key, 'GET', '/pit?include=values')).body.entries.map(
        (e: { key: string; value: unknown }) => [e.key, e.value],
      ),
      thenListed.map((e: { key: string; value: unknown }) => [e.key, e.value]),
      'the namespace is as it was at that point',
    )
    const versions = (await v1(base, key, 'GET', '/pit/k00?history=1')).body.versions
    t.same(
      versions.map((v: { value: unknown }) => v.value),
      [0, 'changed 0', 0],
      'a key restored is a new write: its change stays in its history',
    )
    // Sent again, nothing is left to change.
    await dialog.getByRole('button', { name: 'Preview' }).click()
    await dialog.getByRole('status').filter({ hasText: 'No keys will change' }).waitFor()
    await page.keyboard.press('Escape')
  })

  t.same(errors, [], 'no script errors')
})
