// Small helpers every page uses: building elements, calling the dashboard API with the
// CSRF token, formatting numbers, copy buttons, dialogs and announcements.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === undefined || v === null || v === false) continue
    if (k === 'class') el.className = v
    else if (k === 'text') el.textContent = v
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v)
    else if (v === true) el.setAttribute(k, '')
    else el.setAttribute(k, String(v))
  }
  append(el, children)
  return el
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue
    if (Array.isArray(c)) append(el, c)
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)))
  }
}

export const csrfToken = () => document.querySelector('meta[name="csrf-token"]')?.content ?? ''

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message)
    this.status = status
    this.code = code
  }
}

/**
 * Calls the dashboard API. `body` is sent as JSON, or as it is when `opts.raw` (the data
 * browser sends value bodies as the exact text /v1 takes); `opts.headers` adds headers.
 */
export async function api(method, path, body, opts = {}) {
  const init = {
    method,
    headers: { Accept: 'application/json', ...opts.headers },
    credentials: 'same-origin',
  }
  if (method !== 'GET') {
    init.headers['Content-Type'] = 'application/json'
    init.headers['X-CSRF-Token'] = csrfToken()
    init.body = opts.raw ? body : JSON.stringify(body ?? {})
  }
  let res
  try {
    res = await fetch(`/dashboard/api${path}`, init)
  } catch {
    throw new ApiError(
      0,
      'network',
      'Cannot reach the server. Check your connection and try again.',
    )
  }
  const data = await res.json().catch(() => ({}))
  if (!res.ok) {
    const err = data.error ?? {}
    if (res.status === 401 && !['/login', '/signup'].includes(location.pathname)) {
      location.assign(`/login?next=${encodeURIComponent(location.pathname)}`)
    }
    throw new ApiError(
      res.status,
      err.code ?? 'error',
      err.message ?? `Request failed (${res.status}).`,
    )
  }
  return data
}

const nf = new Intl.NumberFormat('en')
/**
 * Where to go after log-in: `next` only when it is a path on this very origin. It is parsed
 * against the origin, as the browser will: backslashes (browsers read `/\evil` as
 * `//evil`), control characters and their percent-encodings, schemes and `//` are refused,
 * and so is anything that resolves to another origin. Anything refused goes to the overview.
 */
export function safeNext(next, origin = location.origin) {
  if (typeof next !== 'string' || !next.startsWith('/') || next.startsWith('//')) return '/'
  let decoded = next
  try {
    decoded = decodeURIComponent(next)
  } catch {
    return '/'
  }
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are the point
  if (/[\\\u0000-\u001f\u007f]/.test(next) || /[\\\u0000-\u001f\u007f]/.test(decoded)) return '/'
  if (decoded.startsWith('//')) return '/'
  let url
  try {
    url = new URL(next, origin)
  } catch {
    return '/'
  }
  if (url.origin !== origin) return '/'
  return url.pathname + url.search + url.hash
}

export const fmtNum = (n) => (n === null || n === undefined ? 'Unlimited' : nf.format(n))

export function fmtBytes(n) {
  if (n === null || n === undefined) return 'Unlimited'
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB']
  let i = 0
  let v = n
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024
    i++
  }
  return `${i === 0 ? v : v.toFixed(v >= 10 ? 0 : 1)} ${units[i]}`
}

export function fmtDate(value) {
  if (value === null || value === undefined || value === '') return 'Never'
  const d = new Date(typeof value === 'number' && value < 1e12 ? value * 1000 : value)
  if (Number.isNaN(d.getTime())) return String(value)
  return d.toLocaleString('en', { dateStyle: 'medium', timeStyle: 'short' })
}

export function announce(message) {
  const live = document.getElementById('live')
  if (!live) return
  live.textContent = ''
  setTimeout(() => {
    live.textContent = message
  }, 50)
}

export function copyButton(getText, label = 'Copy') {
  const btn = h('button', { type: 'button', class: 'btn btn-small', 'data-copy': '' }, label)
  btn.addEventListener('click', async () => {
    const text = typeof getText === 'function' ? getText() : getText
    let ok = false
    try {
      await navigator.clipboard.writeText(text)
      ok = true
    } catch {
      const ta = h('textarea', { class: 'visually-hidden' })
      ta.value = text
      document.body.append(ta)
      ta.select()
      ok = document.execCommand('copy')
      ta.remove()
    }
    btn.textContent = ok ? 'Copied' : 'Copy failed'
    announce(ok ? 'Copied to the clipboard' : 'Copying failed; select the text instead')
    setTimeout(() => {
      btn.textContent = label
    }, 2000)
  })
  return btn
}

/** A labelled form field with room for a hint and an error message. */
export function field({ label, name, type = 'text', hint, ...attrs }) {
  const id = `f-${name}-${Math.random().toString(36).slice(2, 7)}`
  const hintId = hint ? `${id}-hint` : undefined
  const errId = `${id}-err`
  const input =
    type === 'textarea'
      ? h('textarea', {
          id,
          name,
          'aria-describedby': [hintId, errId].filter(Boolean).join(' '),
          ...attrs,
        })
      : type === 'select'
        ? h('select', { id, name, 'aria-describedby': hintId }, attrs.options)
        : h('input', {
            id,
            name,
            type,
            'aria-describedby': [hintId, errId].filter(Boolean).join(' '),
            ...attrs,
          })
  if (type === 'select') input.removeAttribute('options')
  const wrap = h(
    'div',
    { class: 'field' },
    h('label', { for: id }, label),
    hint ? h('p', { class: 'hint', id: hintId }, hint) : null,
    input,
    h('p', { class: 'field-error', id: errId, role: 'alert' }),
  )
  return { wrap, input, setError: (msg) => setFieldError(input, wrap, msg) }
}

function setFieldError(input, wrap, msg) {
  const p = wrap.querySelector('.field-error')
  p.textContent = msg ?? ''
  if (msg) input.setAttribute('aria-invalid', 'true')
  else input.removeAttribute('aria-invalid')
}

/** A form-level error box that screen readers hear. */
export function errorBox() {
  const box = h('div', { class: 'alert alert-error', role: 'alert', hidden: true })
  return {
    box,
    show(msg) {
      box.textContent = msg
      box.hidden = !msg
    },
  }
}

/** Disables a form's button while its promise runs, and shows failures in the error box. */
export function submitting(form, errors, fn) {
  form.addEventListener('submit', async (e) => {
    e.preventDefault()
    const btn = form.querySelector('button[type="submit"]')
    errors.show('')
    if (btn) btn.disabled = true
    try {
      await fn(new FormData(form))
    } catch (err) {
      errors.show(err.message)
    } finally {
      if (btn) btn.disabled = false
    }
  })
}

/** A modal dialog (native <dialog>: focus is trapped and Escape closes it). */
export function openDialog(title, body, actions) {
  const dlg = h(
    'dialog',
    { class: 'dialog', 'aria-labelledby': 'dlg-title' },
    h('h2', { id: 'dlg-title' }, title),
    body,
    h('div', { class: 'actions' }, actions),
  )
  dlg.addEventListener('close', () => dlg.remove())
  document.body.append(dlg)
  dlg.showModal()
  return dlg
}

/**
 * Examples that work with this very key: a read-only key's examples only read, and a key
 * limited to some namespaces uses one of its own. `key` is { permission, namespaces }
 * (namespaces null for all); `existing` names the account's namespaces.
 */
export function examples(secret, key = {}, existing = [], origin = location.origin) {
  const header = `-H "x-api-key: ${secret}"`
  const json = '-H "content-type: application/json"'
  const scope = key.namespaces ?? null
  const ns = scope
    ? scope[0]
    : existing.includes('demo') || existing.length === 0
      ? 'demo'
      : existing[0]
  const exists = existing.includes(ns)
  if (key.permission === 'read') {
    const curl = [
      `curl ${origin}/v1/namespaces ${header}`,
      `curl ${origin}/v1/usage ${header}`,
      exists ? `curl "${origin}/v1/${ns}?limit=10" ${header}` : null,
    ]
      .filter(Boolean)
      .join('\n\n')
    const client = `// npm install cairn-client
import { Cairn } from 'cairn-client'

// This key may only read${scope ? ` (namespaces: ${scope.join(', ')})` : ''}.
const kv = new Cairn('${secret}', { baseUrl: '${origin}/v1' })
console.log(await kv.namespaces())${exists ? `\nfor await (const key of kv.keys('${ns}')) console.log(key)` : ''}`
    return { curl, client }
  }
  const create = exists
    ? null
    : `curl -X POST ${origin}/v1/namespaces \\
  ${header} ${json} \\
  -d '{"name":"${ns}"}'`
  const curl = [
    create,
    `curl -X PUT ${origin}/v1/${ns}/hello \\
  ${header} ${json} \\
  -d '{"value":{"greeting":"hi"}}'`,
    `curl ${origin}/v1/${ns}/hello ${header}`,
  ]
    .filter(Boolean)
    .join('\n\n')
  const client = `// npm install cairn-client
import { Cairn } from 'cairn-client'

const kv = new Cairn('${secret}', { baseUrl: '${origin}/v1' })
${exists ? '' : `await kv.createNamespace('${ns}')\n`}await kv.put('${ns}', 'hello', { greeting: 'hi' })
console.log(await kv.get('${ns}', 'hello')) // { value, version }`
  return { curl, client }
}

/** The secret, shown once, with copy buttons and examples ready to paste. */
export function secretPanel(secret, heading, key, existing) {
  const ex = examples(secret, key, existing)
  const code = (text, label) =>
    h(
      'div',
      { class: 'code-block' },
      h(
        'div',
        { class: 'code-head' },
        h('span', {}, label),
        copyButton(text, `Copy ${label.toLowerCase()}`),
      ),
      h('pre', { tabindex: '0' }, h('code', {}, text)),
    )
  return h(
    'section',
    { class: 'card secret-panel', 'aria-labelledby': 'secret-h' },
    h('h2', { id: 'secret-h' }, heading),
    h(
      'p',
      { class: 'warn' },
      'Copy it now: this is the only time the full key is shown. Only a hash is stored.',
    ),
    h(
      'div',
      { class: 'secret-row' },
      h('code', { class: 'secret', id: 'new-secret', 'data-secret': secret }, secret),
      copyButton(secret, 'Copy key'),
    ),
    code(ex.curl, 'curl'),
    code(ex.client, 'Client'),
  )
}
