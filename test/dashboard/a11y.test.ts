// Every page at 375 and 1440 px: no sideways scrolling, one h1, every control named, no id
// used twice, text contrast at WCAG AA, the keyboard reaching everything (skip link,
// dialogs, forms); and the first load is small, compressed and from this origin only.
import t from 'tap'
import { startServer } from '../helpers/server.js'
import {
  PASSWORD,
  launch,
  newContext,
  open,
  pageErrors,
  shoot,
  signUp,
  skip,
  uniqueEmail,
  v1,
} from './helpers.js'

/** Runs in the page: problems found on it, as sentences. */
function audit(): string[] {
  const problems: string[] = []
  const visible = (el: Element) =>
    el.getClientRects().length > 0 &&
    getComputedStyle(el).visibility !== 'hidden' &&
    !el.closest('.visually-hidden')
  const doc = document.documentElement
  if (doc.scrollWidth > window.innerWidth)
    problems.push(`page is ${doc.scrollWidth}px wide in a ${window.innerWidth}px window`)
  if (doc.lang !== 'en') problems.push('no lang on <html>')
  if (!document.title.trim()) problems.push('no title')
  const h1s = document.querySelectorAll('h1')
  if (h1s.length !== 1) problems.push(`${h1s.length} h1 elements`)
  for (const el of document.querySelectorAll<HTMLElement>('input, select, textarea')) {
    const named =
      (el as HTMLInputElement).labels?.length ||
      el.getAttribute('aria-label') ||
      el.getAttribute('aria-labelledby')
    if (!named)
      problems.push(`unlabelled ${el.tagName.toLowerCase()} ${el.getAttribute('name') ?? ''}`)
  }
  for (const el of document.querySelectorAll<HTMLElement>('button, a[href]')) {
    if (visible(el) && !(el.textContent?.trim() || el.getAttribute('aria-label')))
      problems.push(`nameless ${el.tagName.toLowerCase()}`)
  }
  for (const img of document.querySelectorAll('img'))
    if (!img.hasAttribute('alt')) problems.push('img without alt')
  // A repeated id sends getElementById (the live region's announcements, a label's for) to
  // whichever element comes first.
  const ids = new Map<string, number>()
  for (const el of document.querySelectorAll('[id]')) ids.set(el.id, (ids.get(el.id) ?? 0) + 1)
  for (const [id, n] of ids) if (n > 1) problems.push(`id "${id}" on ${n} elements`)

  const parse = (c: string) => {
    const p = (/\(([^)]+)\)/.exec(c)?.[1] ?? '0,0,0,0')
      .split(/[\s,/]+/)
      .filter(Boolean)
      .map(Number)
    return { r: p[0]!, g: p[1]!, b: p[2]!, a: p.length > 3 ? p[3]! : 1 }
  }
  const lum = ({ r, g, b }: { r: number; g: number; b: number }) => {
    const f = (v: number) => {
      const c = v / 255
      return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4
    }
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b)
  }
  const background = (el: Element) => {
    const layers = []
    for (let e: Element | null = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor)
      if (c.a > 0) layers.push(c)
      if (c.a >= 1) break
    }
    let out = { r: 255, g: 255, b: 255 }
    for (const c of layers.reverse())
      out = {
        r: c.r * c.a + out.r * (1 - c.a),
        g: c.g * c.a + out.g * (1 - c.a),
        b: c.b * c.a + out.b * (1 - c.a),
      }
    return out
  }
  for (const el of document.querySelectorAll<HTMLElement>('body *')) {
    if (!visible(el) || el.closest('[disabled], canvas, noscript, option')) continue
    const text = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent!.trim())
    if (!text) continue
    const style = getComputedStyle(el)
    const fg = parse(style.color)
    const bg = background(el)
    const [hi, lo] = [lum(fg), lum(bg)].sort((a, b) => b - a) as [number, number]
    const ratio = (hi + 0.05) / (lo + 0.05)
    const size = Number.parseFloat(style.fontSize)
    const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700)
    if (ratio < (large ? 3 : 4.5))
      problems.push(`contrast ${ratio.toFixed(2)} for "${el.textContent!.trim().slice(0, 30)}"`)
  }
  return problems
}

t.test('every page: layout, names, contrast, keyboard, weight', { skip }, async (t) => {
  const srv = await startServer()
  t.teardown(() => srv.stop())
  const base = srv.url
  const browser = await launch(t)
  const anon = await (await newContext(browser, base)).newPage()
  const page = await (await newContext(browser, base)).newPage()
  const errors = [...pageErrors(page), ...pageErrors(anon)]
  const key = await signUp(page, base, uniqueEmail('a11y'))
  t.equal((await v1(base, key, 'POST', '/namespaces', { name: 'demo' })).status, 201)
  t.equal((await v1(base, key, 'PUT', '/demo/greeting', { value: { hello: 'world' } })).status, 201)

  const pages: [typeof page, string, string][] = [
    [anon, '/login', 'login'],
    [anon, '/signup', 'signup'],
    [anon, '/nowhere', 'not-found'],
    [page, '/', 'overview'],
    [page, '/keys', 'keys'],
    [page, '/namespaces', 'namespaces'],
    [page, '/namespaces/demo', 'browser'],
    [page, '/plan', 'plan'],
    [page, '/account', 'account'],
  ]
  for (const [p, path, name] of pages) {
    await t.test(path, async (t) => {
      for (const width of [375, 1440]) {
        await p.setViewportSize({ width, height: 900 })
        await open(p, `${base}${path}`)
        if (path === '/namespaces/demo') await p.locator('.key-item').first().click()
        t.same(await p.evaluate(audit), [], `no problems at ${width} px`)
      }
      await shoot(p, `page-${name}`)
    })
  }

  // What opens on the data browser's page: a key's History tab, and the Import and Restore to
  // a point in time dialogs, audited as the pages are.
  for (const [opener, name] of [
    ['History', 'key-history'],
    ['Import', 'import'],
    ['Restore to a point in time', 'restore-point'],
  ] as const) {
    await t.test(`/namespaces/demo: ${opener}`, async (t) => {
      for (const width of [375, 1440]) {
        await page.setViewportSize({ width, height: 900 })
        await open(page, `${base}/namespaces/demo`)
        if (opener === 'History') {
          await page.locator('.key-item').first().click()
          await page.getByRole('tab', { name: 'History' }).click()
          await page.locator('#history-list tbody tr').first().waitFor()
        } else {
          await page.getByRole('button', { name: opener, exact: true }).click()
          await page.getByRole('dialog').waitFor()
        }
        t.same(await page.evaluate(audit), [], `no problems at ${width} px`)
      }
      await shoot(page, `page-browser-${name}`)
    })
  }

  await t.test('the keyboard reaches the content and works the forms', async (t) => {
    await open(page, `${base}/`)
    await page.keyboard.press('Tab')
    t.equal(await page.evaluate(() => document.activeElement?.textContent), 'Skip to content')
    await page.keyboard.press('Enter')
    t.equal(
      await page.evaluate(() => document.activeElement?.id),
      'main',
      'the skip link moves focus',
    )
    await page.keyboard.press('Tab')
    t.equal(await page.evaluate(() => document.activeElement?.textContent), 'Compare plans')
    const ring = await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle)
    t.not(ring, 'none', 'focus is visible')

    await open(anon, `${base}/login`)
    t.equal(
      await anon.evaluate(() => document.activeElement?.getAttribute('type')),
      'email',
      'focus starts in the form',
    )
    await anon.keyboard.type('nobody@example.com')
    await anon.keyboard.press('Tab')
    await anon.keyboard.type(PASSWORD)
    await anon.keyboard.press('Enter')
    await t.resolves(
      anon.getByRole('alert').filter({ hasText: 'do not match' }).waitFor(),
      'Enter submits',
    )

    await open(page, `${base}/namespaces`)
    await page.getByRole('button', { name: 'Delete demo' }).focus()
    await page.keyboard.press('Enter')
    const dialog = page.getByRole('dialog')
    await dialog.waitFor()
    t.ok(
      await dialog.evaluate((d) => d.contains(document.activeElement)),
      'focus moves into the dialog',
    )
    await page.keyboard.press('Escape')
    await dialog.waitFor({ state: 'detached' })
    t.equal((await v1(base, key, 'GET', '/namespaces')).body.namespaces.length, 1, 'Escape cancels')
  })

  await t.test('the first load is small, compressed and same-origin', async (t) => {
    // Signed in through the API with an empty cache, so the overview's load is a first load.
    const fresh = await (await newContext(browser, base)).newPage()
    const email = uniqueEmail('weight')
    await srv.createAccount(email, { password: PASSWORD })
    const request = fresh.context().request
    const login = await (await request.get(`${base}/login`)).text()
    const token = /name="csrf-token" content="([^"]+)"/.exec(login)![1]!
    const signedIn = await request.post(`${base}/dashboard/api/login`, {
      headers: { origin: base, 'x-csrf-token': token },
      data: { email, password: PASSWORD },
    })
    t.equal(signedIn.status(), 200)
    const seen: { url: string; bytes: number; encoding: string | undefined }[] = []
    fresh.on('response', async (r) => {
      const headers = await r.allHeaders()
      seen.push({
        url: r.url(),
        bytes: Number(headers['content-length'] ?? 0),
        encoding: headers['content-encoding'],
      })
    })
    await open(fresh, `${base}/`)
    await fresh.locator('#chart-storage canvas').waitFor()
    await fresh.waitForLoadState('networkidle')
    const assets = seen.filter((s) => new URL(s.url).pathname.startsWith('/assets/'))
    t.ok(assets.length > 0)
    t.same(
      seen.filter((s) => !s.url.startsWith(base)),
      [],
      'nothing from other origins',
    )
    t.same(
      assets.filter((s) => s.encoding !== 'gzip' && s.bytes > 1024),
      [],
      'scripts and styles are gzipped',
    )
    const total = seen.reduce((n, s) => n + s.bytes, 0)
    t.ok(total < 100 * 1024, `the overview, charts included, is ${total} bytes on the wire`)
    t.comment(`overview first load: ${seen.length} responses, ${total} bytes`)
  })

  t.same(errors, [])
})
