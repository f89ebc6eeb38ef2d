// Shared pieces of the dashboard's browser tests: Debian's Chromium through playwright-core,
// a real server, screenshots under test-output/dashboard/, and the few steps every test
// repeats (sign up, wait for a page to be drawn).
import fs from 'node:fs'
import path from 'node:path'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { launchChromium } from '../helpers/browser.js'
import { type StartOptions, type TestServer, root, startServer } from '../helpers/server.js'

export { skip } from '../helpers/browser.js'
export const SHOTS = path.join(root, 'test-output', 'dashboard')
export const PASSWORD = 'correct horse battery'

interface Tap {
  teardown(fn: () => unknown): void
}

export function launch(t: Tap): Promise<Browser> {
  return launchChromium(t)
}

/** A fresh browser profile (its own cookies) at 1440 px, able to read the clipboard. */
export async function newContext(browser: Browser, origin: string): Promise<BrowserContext> {
  const ctx = await browser.newContext({ viewport: { width: 1440, height: 900 } })
  await ctx.grantPermissions(['clipboard-read', 'clipboard-write'], { origin })
  return ctx
}

/** A real server (stopped at teardown) and a page of a fresh browser profile on it. */
export async function serverAndPage(
  t: Tap,
): Promise<{ srv: TestServer; base: string; page: Page }> {
  const srv = await startServer()
  t.teardown(() => srv.stop())
  const browser = await launch(t)
  const page = await (await newContext(browser, srv.url)).newPage()
  return { srv, base: srv.url, page }
}

/**
 * What most browser tests begin with: a real server (stopped at teardown), a page of a fresh
 * browser profile on it, its uncaught errors collected, and an account signed up through the
 * form (`key`: its first API key's secret).
 */
export async function signedIn(
  t: Tap,
  tag: string,
  opts: StartOptions = {},
): Promise<{
  srv: TestServer
  base: string
  browser: Browser
  page: Page
  errors: string[]
  email: string
  key: string
}> {
  const srv = await startServer(opts)
  t.teardown(() => srv.stop())
  const browser = await launch(t)
  const page = await (await newContext(browser, srv.url)).newPage()
  const errors = pageErrors(page)
  const email = uniqueEmail(tag)
  const key = await signUp(page, srv.url, email)
  return { srv, base: srv.url, browser, page, errors, email, key }
}

/** Collects uncaught errors of a page, so a test can insist there were none. */
export function pageErrors(page: Page): string[] {
  const errors: string[] = []
  page.on('pageerror', (e) => errors.push(e.message))
  return errors
}

/** Resolves once app.js has drawn the page (it drops aria-busy when done). */
export async function ready(page: Page): Promise<void> {
  await page.waitForSelector('#app:not([aria-busy])', { timeout: 15_000 })
}

export async function open(page: Page, url: string): Promise<void> {
  await page.goto(url)
  await ready(page)
}

/** Full-page screenshots at 1440 and 375 px wide: `<name>-1440.png`, `<name>-375.png`. */
export async function shoot(page: Page, name: string): Promise<void> {
  fs.mkdirSync(SHOTS, { recursive: true })
  const size = page.viewportSize() ?? { width: 1440, height: 900 }
  for (const width of [1440, 375]) {
    await page.setViewportSize({ width, height: 900 })
    // uPlot resizes on the next frame after its box changes.
    await page.evaluate(
      () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))),
    )
    await page.screenshot({ path: path.join(SHOTS, `${name}-${width}.png`), fullPage: true })
  }
  await page.setViewportSize(size)
}

export const uniqueEmail = (tag: string) =>
  `${tag}-${process.pid}-${Date.now()}-${Math.floor(Math.random() * 1e6)}@example.com`

/** Signs up through the form; resolves with the first key's secret as the page shows it. */
export async function signUp(page: Page, base: string, email: string): Promise<string> {
  await open(page, `${base}/signup`)
  await page.getByLabel('Email').fill(email)
  await page.getByLabel('Password').fill(PASSWORD)
  await page.getByRole('button', { name: 'Sign up' }).click()
  const secret = page.locator('#new-secret')
  await secret.waitFor()
  return (await secret.textContent()) ?? ''
}

export async function logIn(page: Page, base: string, email: string, password = PASSWORD) {
  await open(page, `${base}/login`)
  await page.getByLabel('Email').fill(email)
  await page.getByLabel('Password').fill(password)
  await page.getByRole('button', { name: 'Log in' }).click()
}

/** Calls /v1 with an API key; resolves with the status and the parsed body. */
export async function v1(
  base: string,
  key: string,
  method: string,
  p: string,
  body?: unknown,
): Promise<{ status: number; body: any; text: string; headers: Headers }> {
  const res = await fetch(`${base}/v1${p}`, {
    method,
    headers: {
      'x-api-key': key,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  })
  const text = await res.text()
  let parsed: any
  try {
    parsed = JSON.parse(text)
  } catch {}
  return { status: res.status, body: parsed, text, headers: res.headers }
}

export { runCurlExamples } from '../helpers/curl.js'
