// Draws the page the address names. Every page is a full load of the same shell, so
// links, the back button and a reload all behave as people expect.
import { showAlerts } from './banner.js'
import { api, h } from './lib.js'

const PAGES = {
  '/login': { module: './pages/login.js', public: true },
  '/signup': { module: './pages/signup.js', public: true },
  '/': { module: './pages/overview.js', nav: 'overview' },
  '/keys': { module: './pages/keys.js', nav: 'keys' },
  '/namespaces': { module: './pages/namespaces.js', nav: 'namespaces' },
  '/plan': { module: './pages/plan.js', nav: 'plan' },
  '/account': { module: './pages/account.js', nav: 'account' },
}

const NAV = [
  ['overview', '/', 'Overview'],
  ['keys', '/keys', 'API keys'],
  ['namespaces', '/namespaces', 'Namespaces'],
  ['plan', '/plan', 'Plan'],
  ['account', '/account', 'Account'],
]

function pageFor(path) {
  const clean = path.length > 1 ? path.replace(/\/+$/, '') : path
  if (PAGES[clean]) return PAGES[clean]
  if (/^\/namespaces\/[^/]+$/.test(clean))
    return { module: './pages/browser.js', nav: 'namespaces' }
  return { module: './pages/not-found.js', public: true }
}

function brand() {
  return h(
    'a',
    { class: 'brand', href: '/' },
    h('img', { src: '/assets/icon.svg', alt: '', width: '28', height: '28' }),
    h('span', {}, 'Cairn'),
  )
}

function privateLayout(active, me) {
  const main = h('main', { id: 'main', tabindex: '-1' })
  const logout = h('button', { type: 'button', class: 'btn btn-ghost', id: 'logout' }, 'Log out')
  logout.addEventListener('click', async () => {
    logout.disabled = true
    try {
      await api('POST', '/logout')
    } finally {
      location.assign('/login')
    }
  })
  const header = h(
    'header',
    { class: 'topbar' },
    h(
      'div',
      { class: 'topbar-inner' },
      brand(),
      h(
        'nav',
        { 'aria-label': 'Main' },
        h(
          'ul',
          {},
          NAV.map(([id, href, label]) =>
            h('li', {}, h('a', { href, 'aria-current': id === active ? 'page' : null }, label)),
          ),
        ),
      ),
      h(
        'div',
        { class: 'who' },
        h('span', { class: 'badge', title: 'Your plan' }, me.plan?.name ?? me.account.plan),
        h('span', { class: 'email' }, me.account.email),
        logout,
      ),
    ),
  )
  return { root: [header, main], main }
}

function publicLayout() {
  const main = h('main', { id: 'main', tabindex: '-1', class: 'narrow' })
  return {
    root: [
      h('header', { class: 'topbar plain' }, h('div', { class: 'topbar-inner' }, brand())),
      main,
    ],
    main,
  }
}

async function start() {
  const app = document.getElementById('app')
  const spec = pageFor(location.pathname)
  const live = h('div', { id: 'live', class: 'visually-hidden', 'aria-live': 'polite' })
  let me = null
  if (!spec.public) {
    try {
      me = await api('GET', '/me')
    } catch (err) {
      // A 401: api() has already sent the visitor to the log-in page.
      if (err.status === 401) return
      // Anything else (storage refusing for a moment, a rate limit, the network): say so,
      // with a way to try again, rather than leave the page blank.
      const { root, main } = publicLayout()
      main.append(
        h('h1', {}, 'The dashboard could not load'),
        h('div', { class: 'alert alert-error', role: 'alert' }, err.message),
        h(
          'p',
          { class: 'actions' },
          h('a', { class: 'btn btn-primary', href: location.href }, 'Try again'),
        ),
      )
      app.replaceChildren(...root, live)
      app.removeAttribute('aria-busy')
      main.focus()
      return
    }
  }
  const layout = spec.public ? publicLayout() : privateLayout(spec.nav, me)
  app.replaceChildren(...layout.root, live)
  const mod = await import(spec.module)
  if (!spec.public) await showAlerts(layout.main)
  try {
    await mod.render(layout.main, { me })
  } catch (err) {
    layout.main.append(h('div', { class: 'alert alert-error', role: 'alert' }, err.message))
  }
  app.removeAttribute('aria-busy')
}

start()
