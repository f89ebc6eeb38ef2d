// The data browser's key list: search by prefix and page through with the API's cursors
// (a stack of them, so Previous works); each key with its version and expiry. With live
// updates on, a watch of the prefix (Server-Sent Events) keeps the page current: the page is
// listed, then watched from the listing's version, and every change newer than what a page
// shows is applied to it. Deleting by prefix asks for the prefix twice.
import { announce, api, errorBox, field, fmtDate, h, openDialog } from '../lib.js'

const PAGE = 50
/** Changes remembered for pages listed while they were on their way, at most. */
const REMEMBERED = 5000

/** Keys in the API's order: UTF-8 bytes, which is code-point order (not UTF-16 units). */
export function compareKeys(a, b) {
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) {
    const x = a.codePointAt(i)
    const y = b.codePointAt(i)
    if (x !== y) return x - y
    if (x > 0xffff) i++
  }
  return a.length - b.length
}

/** "in 40 s", "in 5 min", "in 3 h", "in 2 days", or the date; the exact time goes in the title. */
function expiresText(seconds) {
  const left = seconds - Date.now() / 1000
  if (left <= 0) return 'now'
  // A TTL of seconds (a lock, a one-time code) would read "in 1 min" as minutes.
  if (left < 90) return `in ${Math.ceil(left)} s`
  if (left < 5400) return `in ${Math.max(1, Math.round(left / 60))} min`
  if (left < 86400 * 2) return `in ${Math.round(left / 3600)} h`
  if (left < 86400 * 30) return `in ${Math.round(left / 86400)} days`
  return fmtDate(seconds)
}

export function keyList(base, { onOpen, onChange = () => {} }) {
  const params = new URLSearchParams(location.search)
  let prefix = params.get('prefix') ?? ''
  let cursors = [null]
  let index = 0
  let marked = null
  /** The page shown: [{ key, version, expiresAt }] in key order, and the version it was read at. */
  let rows = []
  let listed = 0

  const search = h('input', {
    type: 'search',
    id: 'prefix',
    name: 'prefix',
    value: prefix,
    placeholder: 'Key prefix',
    autocomplete: 'off',
    spellcheck: 'false',
  })
  const form = h(
    'form',
    { class: 'search', role: 'search' },
    h('label', { for: 'prefix', class: 'visually-hidden' }, 'Search keys by prefix'),
    search,
    h('button', { type: 'submit', class: 'btn' }, 'Search'),
  )
  const tbody = h('tbody', {})
  const table = h(
    'table',
    { class: 'table compact key-table', id: 'key-list' },
    h('caption', { class: 'visually-hidden' }, 'Keys, with their versions and expiry'),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        h('th', { scope: 'col' }, 'Key'),
        h('th', { scope: 'col', class: 'num' }, 'Version'),
        h('th', { scope: 'col' }, 'Expires'),
      ),
    ),
    tbody,
  )
  const prev = h('button', { type: 'button', class: 'btn btn-small', id: 'prev-page' }, 'Previous')
  const next = h('button', { type: 'button', class: 'btn btn-small', id: 'next-page' }, 'Next')
  const info = h('span', { class: 'muted small', 'aria-live': 'polite' })
  const errors = errorBox()
  const done = h('div', { class: 'alert alert-ok', role: 'status', hidden: true })

  const liveBox = h('input', {
    type: 'checkbox',
    id: 'live-updates',
    name: 'live',
    checked: params.get('live') === '1',
  })
  const liveStatus = h('span', { class: 'small muted', id: 'live-status', role: 'status' })
  const resume = h(
    'button',
    { type: 'button', class: 'btn btn-small', id: 'live-resume', hidden: true },
    'Resume live updates',
  )
  const deletePrefix = h(
    'button',
    { type: 'button', class: 'btn btn-small btn-danger', id: 'delete-prefix' },
    'Delete by prefix…',
  )

  const mark = (key) => {
    marked = key
    for (const b of tbody.querySelectorAll('.key-item')) {
      if (b.dataset.key === key) b.setAttribute('aria-current', 'true')
      else b.removeAttribute('aria-current')
    }
  }

  const row = (r, changed) => {
    const tr = h(
      'tr',
      { 'data-key': r.key, class: changed ? 'row-changed' : null },
      h(
        'td',
        { class: 'key-cell' },
        h(
          'button',
          { type: 'button', class: 'key-item', 'data-key': r.key, onclick: () => onOpen(r.key) },
          r.key,
        ),
      ),
      h('td', { class: 'num', 'data-label': 'Version' }, r.version),
      h(
        'td',
        { class: 'expires', 'data-label': 'Expires' },
        r.expiresAt === null
          ? h('span', { class: 'muted' }, 'Never')
          : h(
              'time',
              {
                datetime: new Date(r.expiresAt * 1000).toISOString(),
                title: fmtDate(r.expiresAt),
              },
              expiresText(r.expiresAt),
            ),
      ),
    )
    if (changed) setTimeout(() => tr.classList.remove('row-changed'), 3000)
    return tr
  }

  const draw = (changedKeys = new Set()) => {
    tbody.replaceChildren(
      ...(rows.length
        ? rows.map((r) => row(r, changedKeys.has(r.key)))
        : [
            h(
              'tr',
              {},
              h(
                'td',
                { colspan: '3', class: 'muted empty-item' },
                prefix ? `No keys start with “${prefix}”.` : 'No keys yet. Add one with the form.',
              ),
            ),
          ]),
    )
    mark(marked)
  }

  // ---- live updates ----
  let source = null
  let watching = null // the prefix the open watch covers
  /** The newest change seen per key, so a page listed before it arrived still shows it. */
  const changes = new Map()

  /** Whether a key that is not on the page belongs between its first and last keys. */
  const belongs = (key) => {
    if (!key.startsWith(prefix)) return false
    if (index > 0 && (rows.length === 0 || compareKeys(key, rows[0].key) < 0)) return false
    const more = cursors[index + 1]
    return !more || (rows.length > 0 && compareKeys(key, rows[rows.length - 1].key) < 0)
  }

  /** Applies a change to the page; true when the page changed. */
  const apply = (c) => {
    if (c.version <= listed) return false // the page was listed after it
    const at = rows.findIndex((r) => r.key === c.key)
    if (at >= 0) {
      if (Number(rows[at].version) >= c.version) return false
      if (c.type === 'delete') rows.splice(at, 1)
      else rows[at] = { key: c.key, version: String(c.version), expiresAt: c.expiresAt ?? null }
      return true
    }
    if (c.type === 'delete' || !belongs(c.key)) return false
    let i = 0
    while (i < rows.length && compareKeys(rows[i].key, c.key) < 0) i++
    rows.splice(i, 0, { key: c.key, version: String(c.version), expiresAt: c.expiresAt ?? null })
    return true
  }

  const received = (type) => (e) => {
    const d = JSON.parse(e.data)
    const c = { type, key: d.key, version: Number(d.version), expiresAt: d.expiresAt }
    const known = changes.get(c.key)
    if (!known || known.version < c.version) changes.set(c.key, c)
    if (changes.size > REMEMBERED) changes.delete(changes.keys().next().value)
    if (apply(c)) draw(new Set([c.key]))
    onChange(c)
  }

  const status = (text, stopped = false) => {
    liveStatus.textContent = text
    resume.hidden = !stopped
  }

  const closeWatch = () => {
    source?.close()
    source = null
    watching = null
  }

  const openWatch = (since) => {
    closeWatch()
    watching = prefix
    const q = new URLSearchParams({ prefix, since: String(since) })
    // EventSource reconnects by itself after a drop and resumes with Last-Event-ID.
    const es = new EventSource(`/dashboard/api${base}/watch?${q}`)
    source = es
    status('Connecting to live updates…')
    es.addEventListener('open', () => {
      status(
        prefix ? `Live: watching keys that start with “${prefix}”.` : 'Live: watching all keys.',
      )
    })
    es.addEventListener('put', received('put'))
    es.addEventListener('delete', received('delete'))
    es.addEventListener('error', (e) => {
      if (source !== es) return
      // An error event the server sent (e.g. too_slow) before it ends the stream, which the
      // browser then resumes; or the connection's own error.
      let reason = ''
      try {
        reason = e.data ? JSON.parse(e.data).message : ''
      } catch {}
      if (es.readyState === EventSource.CLOSED) {
        // The server refused to resume (history gone, too many watches, signed out).
        source = null
        watching = null
        status(`Live updates stopped.${reason ? ` ${reason}` : ''}`, true)
      } else status(`Live updates interrupted; reconnecting…${reason ? ` ${reason}` : ''}`)
    })
  }

  const setLive = (on) => {
    const url = new URL(location.href)
    if (on) url.searchParams.set('live', '1')
    else url.searchParams.delete('live')
    history.replaceState(null, '', url)
    if (!on) {
      closeWatch()
      status('')
      return
    }
    // The page's listing version is where the watch starts: list again, which opens it.
    reload()
  }

  liveBox.addEventListener('change', () => setLive(liveBox.checked))
  resume.addEventListener('click', () => reload())
  // Leaving the page ends the watch (and gives back the plan's slot) at once; a page
  // brought back from the back-forward cache lists again and watches anew.
  window.addEventListener('pagehide', closeWatch)
  window.addEventListener('pageshow', (e) => {
    if (e.persisted && liveBox.checked) reload()
  })

  // Answers can arrive out of order (a search sent while the first page loads): only the
  // newest request's answer is shown, or an old page's cursor would meet a new prefix.
  let latest = 0
  const reload = async () => {
    const mine = ++latest
    errors.show('')
    const q = new URLSearchParams({ prefix, limit: String(PAGE) })
    if (cursors[index]) q.set('cursor', cursors[index])
    let page
    try {
      page = await api('GET', `${base}/keys?${q}`)
    } catch (err) {
      if (mine === latest) errors.show(err.message)
      return
    }
    if (mine !== latest) return
    // A page emptied by deletes: step back rather than show nothing.
    if (page.entries.length === 0 && index > 0) {
      index--
      return reload()
    }
    cursors[index + 1] = page.cursor
    rows = page.entries
    listed = Number(page.version)
    // Changes that arrived while the page was read, and are newer than it.
    for (const [key, c] of changes) {
      if (c.version <= listed) changes.delete(key)
      else apply(c)
    }
    draw()
    prev.disabled = index === 0
    next.disabled = !page.cursor
    info.textContent = `Page ${index + 1}`
    if (liveBox.checked && (source === null || watching !== prefix)) openWatch(listed)
  }

  form.addEventListener('submit', (e) => {
    e.preventDefault()
    prefix = search.value
    done.hidden = true
    cursors = [null]
    index = 0
    const url = new URL(location.href)
    if (prefix) url.searchParams.set('prefix', prefix)
    else url.searchParams.delete('prefix')
    history.replaceState(null, '', url)
    reload()
  })
  prev.addEventListener('click', () => {
    if (index > 0) index--
    reload()
  })
  next.addEventListener('click', () => {
    if (cursors[index + 1]) index++
    reload()
  })

  deletePrefix.addEventListener('click', () => {
    const which = field({
      label: 'Prefix',
      name: 'delete-prefix',
      autocomplete: 'off',
      spellcheck: 'false',
      value: prefix,
      hint: 'Every key that begins with it is deleted. It cannot be empty.',
    })
    const confirm = field({
      label: 'Type the prefix again to confirm',
      name: 'delete-prefix-confirm',
      autocomplete: 'off',
      spellcheck: 'false',
    })
    const errs = errorBox()
    const go = h(
      'button',
      { type: 'button', class: 'btn btn-danger', disabled: true },
      'Delete keys',
    )
    const cancel = h('button', { type: 'button', class: 'btn' }, 'Cancel')
    const check = () => {
      go.disabled = which.input.value === '' || confirm.input.value !== which.input.value
    }
    which.input.addEventListener('input', check)
    confirm.input.addEventListener('input', check)
    const dlg = openDialog(
      'Delete keys by prefix?',
      h(
        'div',
        {},
        h('p', {}, 'The keys and their values are deleted for good.'),
        errs.box,
        which.wrap,
        confirm.wrap,
      ),
      [cancel, go],
    )
    ;(prefix ? confirm : which).input.focus()
    cancel.addEventListener('click', () => dlg.close())
    go.addEventListener('click', async () => {
      const p = which.input.value
      go.disabled = true
      try {
        const res = await api('DELETE', `${base}/keys?${new URLSearchParams({ prefix: p })}`, {
          confirm: confirm.input.value,
        })
        dlg.close()
        const text = `Deleted ${res.deleted} key${res.deleted === 1 ? '' : 's'} starting with “${p}”.`
        done.textContent = text
        done.hidden = false
        announce(text)
        await reload()
      } catch (err) {
        errs.show(err.message)
        check()
      }
    })
  })

  const element = h(
    'section',
    { class: 'card keys-pane', 'aria-label': 'Keys' },
    form,
    h(
      'div',
      { class: 'live-row' },
      h('label', { class: 'check', for: 'live-updates' }, liveBox, 'Live updates'),
      liveStatus,
      resume,
    ),
    errors.box,
    done,
    h('div', { class: 'key-scroll' }, table),
    h('div', { class: 'pager' }, prev, info, next),
    h('div', { class: 'prefix-actions' }, deletePrefix),
  )
  return {
    element,
    reload,
    mark,
    prefix: () => prefix,
  }
}
