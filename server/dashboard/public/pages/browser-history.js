// A key's History tab: its versions newest first (version, time in UTC, value), each older
// one with "Restore this version", which writes it back as a new write. A version that was a
// delete is listed as deleted, and restoring it deletes the key again.
import { announce, api, errorBox, h } from '../lib.js'

const fmtUtc = (iso) => `${iso.slice(0, 19).replace('T', ' ')} UTC`

/** The value's JSON text, shortened for the table (the whole text in the cell's title). */
function shortValue(json) {
  const one = json.replace(/\s+/g, ' ')
  return one.length > 120 ? `${one.slice(0, 119)}…` : one
}

export function historyPanel(base, { onRestored }) {
  const errors = errorBox()
  const tbody = h('tbody', {})
  const more = h(
    'button',
    { type: 'button', class: 'btn btn-small', hidden: true },
    'Older versions',
  )
  const empty = h('p', { class: 'muted', hidden: true }, 'No versions within the history.')
  const table = h(
    'table',
    { class: 'table compact history-table', id: 'history-list' },
    h('caption', { class: 'visually-hidden' }, 'Versions of the key, newest first'),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        h('th', { scope: 'col', class: 'num' }, 'Version'),
        h('th', { scope: 'col' }, 'Time (UTC)'),
        h('th', { scope: 'col' }, 'Value'),
        h('th', { scope: 'col' }, h('span', { class: 'visually-hidden' }, 'Actions')),
      ),
    ),
    tbody,
  )
  const element = h(
    'div',
    { class: 'history' },
    errors.box,
    h('div', { class: 'table-scroll' }, table),
    empty,
    more,
  )
  let key = null
  let before = null

  const restoreButton = (v) => {
    const btn = h(
      'button',
      { type: 'button', class: 'btn btn-small', 'data-version': v.version },
      'Restore this version',
    )
    btn.addEventListener('click', async () => {
      errors.show('')
      btn.disabled = true
      try {
        const r = await api('POST', `${base}/restore-version?${new URLSearchParams({ key })}`, {
          version: v.version,
        })
        announce(
          r.restored === 0
            ? `${key} is already as it was at version ${v.version}`
            : v.deleted
              ? `${key} deleted again, as at version ${v.version}`
              : `${key} restored to version ${v.version}`,
        )
        await onRestored(key, v.deleted)
      } catch (err) {
        errors.show(err.message)
        btn.disabled = false
      }
    })
    return btn
  }

  const row = (v, newest) =>
    h(
      'tr',
      { 'data-version': v.version },
      h('td', { class: 'num', 'data-label': 'Version' }, v.version, newest ? ' (current)' : ''),
      h('td', { 'data-label': 'Time (UTC)' }, h('time', { datetime: v.at }, fmtUtc(v.at))),
      h(
        'td',
        { class: 'mono history-value', 'data-label': 'Value', title: v.json ?? '' },
        v.deleted ? h('span', { class: 'muted' }, 'Deleted') : shortValue(v.json ?? ''),
      ),
      h('td', { class: 'row-actions' }, newest ? null : restoreButton(v)),
    )

  const load = async (append) => {
    errors.show('')
    const q = new URLSearchParams({ key })
    if (append && before) q.set('before', before)
    try {
      const r = await api('GET', `${base}/history?${q}`)
      const first = !append
      if (first) tbody.replaceChildren()
      for (const [i, v] of r.versions.entries()) tbody.append(row(v, first && i === 0))
      before = r.before
      more.hidden = before === null
      empty.hidden = tbody.childElementCount > 0
    } catch (err) {
      errors.show(err.message)
    }
  }
  more.addEventListener('click', () => load(true))

  return {
    element,
    /** Lists the versions of `k`. */
    show: async (k) => {
      key = k
      before = null
      await load(false)
    },
  }
}
