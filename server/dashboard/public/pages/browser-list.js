// The data browser's key list: search by prefix and page through with the API's cursors
// (a stack of them, so Previous works).
import { api, errorBox, h } from '../lib.js'

const PAGE = 50

export function keyList(base, onOpen) {
  let prefix = new URLSearchParams(location.search).get('prefix') ?? ''
  let cursors = [null]
  let index = 0
  let marked = null

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
  const ul = h('ul', { class: 'key-list', id: 'key-list', 'aria-label': 'Keys' })
  const prev = h('button', { type: 'button', class: 'btn btn-small', id: 'prev-page' }, 'Previous')
  const next = h('button', { type: 'button', class: 'btn btn-small', id: 'next-page' }, 'Next')
  const info = h('span', { class: 'muted small', 'aria-live': 'polite' })
  const errors = errorBox()

  const mark = (key) => {
    marked = key
    for (const b of ul.querySelectorAll('.key-item')) {
      if (b.dataset.key === key) b.setAttribute('aria-current', 'true')
      else b.removeAttribute('aria-current')
    }
  }

  const item = (k) =>
    h(
      'li',
      {},
      h(
        'button',
        { type: 'button', class: 'key-item', 'data-key': k, onclick: () => onOpen(k) },
        k,
      ),
    )

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
    if (page.keys.length === 0 && index > 0) {
      index--
      return reload()
    }
    cursors[index + 1] = page.cursor
    ul.replaceChildren(
      ...(page.keys.length
        ? page.keys.map(item)
        : [
            h(
              'li',
              { class: 'muted empty-item' },
              prefix ? `No keys start with “${prefix}”.` : 'No keys yet. Add one with the form.',
            ),
          ]),
    )
    mark(marked)
    prev.disabled = index === 0
    next.disabled = !page.cursor
    info.textContent = `Page ${index + 1}`
  }

  form.addEventListener('submit', (e) => {
    e.preventDefault()
    prefix = search.value
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

  const element = h(
    'section',
    { class: 'card keys-pane', 'aria-label': 'Keys' },
    form,
    errors.box,
    ul,
    h('div', { class: 'pager' }, prev, info, next),
  )
  return { element, reload, mark, prefix: () => prefix }
}
