// Every dashboard page is the same small HTML shell; app.js draws the page its path names.
// The server decides who may see which page, so a signed-out visitor is sent to the login
// page before any script runs.
import { randomToken } from '../services/secrets.js'
import type { Assets } from './assets.js'
import type { Caller } from './guard.js'
import type { Reply, Req } from '../http/pipeline.js'
import { PRE_SESSION_COOKIE, preSessionCookie } from '../services/sessions.js'

export const PUBLIC_PAGES = ['/login', '/signup']
export const PRIVATE_PAGES = ['/', '/keys', '/namespaces', '/namespaces/:name', '/plan', '/account']

const TITLES: Record<string, string> = {
  '/': 'Overview',
  '/login': 'Log in',
  '/signup': 'Sign up',
  '/keys': 'API keys',
  '/namespaces': 'Namespaces',
  '/plan': 'Plan',
  '/account': 'Account',
}
const TOKEN = /^[A-Za-z0-9_-]{43}$/

const escapeHtml = (s: string) =>
  s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;')

export function shell(assets: Assets, title: string, csrf: string, status = 200): Reply {
  const v = assets.version
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light">
<meta name="csrf-token" content="${escapeHtml(csrf)}">
<title>${escapeHtml(title)} · Cairn</title>
<link rel="icon" href="/assets/icon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/assets/style.css?v=${v}">
<link rel="modulepreload" href="/assets/lib.js">
<script type="module" src="/assets/app.js?v=${v}"></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<div id="app" aria-busy="true"><main id="main" tabindex="-1"><noscript><p class="noscript">The Cairn dashboard needs JavaScript.</p></noscript></main></div>
</body>
</html>
`
  return {
    status,
    headers: { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' },
    body: html,
  }
}

export function page(
  assets: Assets,
  req: Req,
  caller: Caller | undefined,
  isPublic: boolean,
): Reply {
  const path = req.path
  const title = TITLES[path] ?? 'Data browser'
  if (isPublic) {
    if (caller) return redirect('/')
    // Before there is a session, the log-in and sign-up forms prove they came from this
    // site with a token that must match a cookie of ours (double submit).
    const sent = req.cookies[PRE_SESSION_COOKIE]
    const token = sent && TOKEN.test(sent) ? sent : randomToken()
    return { ...shell(assets, title, token), setCookies: [preSessionCookie(token, req.secure)] }
  }
  if (!caller) return redirect(path === '/' ? '/login' : `/login?next=${encodeURIComponent(path)}`)
  return shell(assets, title, caller.session.csrf)
}

/**
 * A 302 to `to`. It has a body, if a short one: an answer with a body goes by tryEnd, which
 * tells the server when the client is not reading (server/http/held-body.ts).
 */
export function redirect(to: string): Reply {
  return {
    status: 302,
    headers: {
      Location: to,
      'Cache-Control': 'no-store',
      'Content-Type': 'text/plain; charset=utf-8',
    },
    body: `Found: ${to}\n`,
  }
}
