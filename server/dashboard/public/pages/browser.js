import { compactJson, formatJson } from '../json-format.js'
import { announce, api, errorBox, field, fmtDate, h, openDialog } from '../lib.js'
import { historyPanel } from './browser-history.js'
import { keyList } from './browser-list.js'
import { transferButtons } from './browser-transfer.js'

export async function render(main) {
  const nsName = decodeURIComponent(location.pathname.split('/')[2] ?? '')
  document.title = `${nsName} · Data browser · Cairn`
  const base = `/namespaces/${encodeURIComponent(nsName)}`
  const valueUrl = (key) => `${base}/value?${new URLSearchParams({ key })}`
  // The entry being edited: { key, version, expiresAt }, or null for a new one.
  let current = null

  const list = keyList(base, { onOpen: (key) => openKey(key), onChange: (c) => changed(c) })

  const keyField = field({ label: 'Key', name: 'key', autocomplete: 'off', spellcheck: 'false' })
  const valueField = field({
    label: 'Value (JSON)',
    name: 'value',
    type: 'textarea',
    rows: '12',
    spellcheck: 'false',
    class: 'code-input',
    placeholder: '{"hello": "world"}',
    hint: 'Any JSON value. Numbers keep every digit.',
  })
  const metaField = field({
    label: 'Metadata (JSON object)',
    name: 'metadata',
    type: 'textarea',
    rows: '3',
    spellcheck: 'false',
    class: 'code-input',
    placeholder: '{"owner": "ada"}',
    hint: 'Optional: a JSON object of up to 1 KiB kept with the key. Leave it empty for none.',
  })
  const ttl = h('input', {
    type: 'number',
    id: 'ttl',
    name: 'ttl',
    min: '1',
    step: '1',
    inputmode: 'numeric',
    class: 'ttl-input',
    'aria-label': 'Seconds until the key expires',
  })
  const radio = (value, label, extra) =>
    h(
      'label',
      { class: 'check' },
      h('input', { type: 'radio', name: 'expiry', value, id: `expiry-${value}` }),
      label,
      extra,
    )
  const keepOption = radio('keep', 'Keep the current expiry')
  const expiry = h(
    'fieldset',
    { class: 'field expiry' },
    h('legend', {}, 'Expiry'),
    keepOption,
    radio('never', 'Never expires'),
    radio('ttl', 'Expires in ', h('span', { class: 'ttl-wrap' }, ttl, ' seconds')),
  )
  const ttlError = h('p', { class: 'field-error', role: 'alert' })
  expiry.append(ttlError)
  const choose = (value) => {
    for (const r of expiry.querySelectorAll('input[type=radio]')) r.checked = r.value === value
  }
  ttl.addEventListener('focus', () => choose('ttl'))

  const editorErrors = errorBox()
  const editorTitle = h('h2', { id: 'editor-title', tabindex: '-1' }, 'New key')
  const save = h('button', { type: 'submit', class: 'btn btn-primary', id: 'save-value' }, 'Save')
  const format = h('button', { type: 'button', class: 'btn', id: 'format-value' }, 'Format JSON')
  const saveMeta = h(
    'button',
    { type: 'button', class: 'btn', id: 'save-meta', hidden: true },
    'Update metadata and expiry only',
  )
  const del = h(
    'button',
    { type: 'button', class: 'btn btn-danger', id: 'delete-value', hidden: true },
    'Delete key',
  )
  // Told when the live view sees the open key change elsewhere.
  const stale = h('div', { class: 'alert alert-warn', role: 'status', hidden: true })
  // An open key has two tabs: its value (the form) and its history.
  const tab = (id, label, selected) =>
    h(
      'button',
      {
        type: 'button',
        role: 'tab',
        id: `tab-${id}`,
        'aria-controls': `panel-${id}`,
        'aria-selected': String(selected),
        tabindex: selected ? '0' : '-1',
      },
      label,
    )
  const tabValue = tab('value', 'Value', true)
  const tabHistory = tab('history', 'History', false)
  const tabs = h(
    'div',
    { role: 'tablist', class: 'tabs', 'aria-label': 'The key', hidden: true },
    tabValue,
    tabHistory,
  )
  const valuePanel = h(
    'div',
    { role: 'tabpanel', id: 'panel-value', 'aria-labelledby': 'tab-value' },
    editorErrors.box,
    stale,
    keyField.wrap,
    valueField.wrap,
    metaField.wrap,
    expiry,
    h('div', { class: 'actions' }, save, format, saveMeta, del),
  )
  const history = historyPanel(base, {
    onRestored: async (key, deleted) => {
      await list.reload()
      if (deleted) return newKey()
      await openKey(key)
    },
  })
  const historyView = h(
    'div',
    { role: 'tabpanel', id: 'panel-history', 'aria-labelledby': 'tab-history', hidden: true },
    history.element,
  )
  const editor = h(
    'form',
    { class: 'card editor', id: 'editor', novalidate: true, 'aria-labelledby': 'editor-title' },
    editorTitle,
    tabs,
    valuePanel,
    historyView,
  )
  let shown = 'value'
  const selectTab = async (which, focus = false) => {
    shown = which
    for (const [t, panel, id] of [
      [tabValue, valuePanel, 'value'],
      [tabHistory, historyView, 'history'],
    ]) {
      t.setAttribute('aria-selected', String(id === which))
      t.tabIndex = id === which ? 0 : -1
      panel.hidden = id !== which
    }
    if (focus) (which === 'value' ? tabValue : tabHistory).focus()
    if (which === 'history' && current) await history.show(current.key)
  }
  tabValue.addEventListener('click', () => selectTab('value'))
  tabHistory.addEventListener('click', () => selectTab('history'))
  // Arrow keys move between the tabs, as a tab list's do.
  tabs.addEventListener('keydown', (e) => {
    if (e.key !== 'ArrowLeft' && e.key !== 'ArrowRight') return
    e.preventDefault()
    selectTab(shown === 'value' ? 'history' : 'value', true)
  })

  const validate = () => {
    const text = valueField.input.value
    try {
      JSON.parse(text)
      valueField.setError('')
      return true
    } catch (err) {
      valueField.setError(
        text.trim()
          ? `Not valid JSON: ${err.message}`
          : 'Enter a JSON value, e.g. {"a": 1} or "text".',
      )
      return false
    }
  }
  // An error clears while the user types the fix, never at the moment they click Save: the
  // click blurs the field first, and an error line vanishing then would move the button out
  // from under the pointer and swallow the click. Leaving the field only ever adds an error.
  const isJson = (text) => {
    try {
      JSON.parse(text)
      return true
    } catch {
      return false
    }
  }
  valueField.input.addEventListener('input', () => {
    if (valueField.input.getAttribute('aria-invalid') === 'true') validate()
  })
  valueField.input.addEventListener('change', () => {
    if (!isJson(valueField.input.value)) validate()
  })
  /** The metadata's text to send (whitespace dropped, as it counts toward 1 KiB), null for none. */
  const metadata = () => {
    const text = metaField.input.value.trim()
    if (text === '') {
      metaField.setError('')
      return null
    }
    let v
    try {
      v = JSON.parse(text)
    } catch {}
    if (typeof v !== 'object' || v === null || Array.isArray(v)) {
      metaField.setError('Metadata is a JSON object, e.g. {"owner": "ada"}, or empty for none.')
      return undefined
    }
    metaField.setError('')
    return compactJson(text)
  }
  metaField.input.addEventListener('input', () => {
    if (metaField.input.getAttribute('aria-invalid') === 'true') metadata()
  })

  /** Shows an error of the API on the field it is about. */
  const showError = (err) => {
    if (err.code === 'invalid_metadata') {
      metaField.setError(err.message)
      metaField.input.focus()
    } else if (err.code === 'invalid_ttl') {
      ttlError.textContent = err.message
      ttl.focus()
    } else if (err.status === 412) {
      editorErrors.show(
        current
          ? 'This value changed since you opened it. Open the key again to see the new value.'
          : 'A key with this name already exists. Open it from the list to edit it.',
      )
    } else editorErrors.show(err.message)
  }

  const changed = (c) => {
    if (!current || c.key !== current.key || c.version <= Number(current.version)) return
    stale.replaceChildren(
      c.type === 'delete'
        ? 'This key was deleted elsewhere. '
        : `This key changed elsewhere (now version ${c.version}). `,
      c.type === 'delete'
        ? null
        : h(
            'button',
            { type: 'button', class: 'btn btn-small', onclick: () => openKey(c.key) },
            'Open the new version',
          ),
    )
    stale.hidden = false
  }

  format.addEventListener('click', () => {
    if (validate()) valueField.input.value = formatJson(valueField.input.value)
  })

  const newKey = (focus = true) => {
    current = null
    editorTitle.textContent = 'New key'
    editorTitle.classList.remove('mono')
    keyField.input.readOnly = false
    keyField.input.value = list.prefix()
    valueField.input.value = ''
    metaField.input.value = ''
    ttl.value = ''
    keepOption.hidden = true
    choose('never')
    del.hidden = true
    saveMeta.hidden = true
    stale.hidden = true
    editorErrors.show('')
    valueField.setError('')
    metaField.setError('')
    ttlError.textContent = ''
    list.mark(null)
    tabs.hidden = true
    selectTab('value')
    if (focus) keyField.input.focus()
  }

  const openKey = async (key) => {
    editorErrors.show('')
    try {
      const entry = await api('GET', valueUrl(key))
      current = { key, version: entry.version, expiresAt: entry.expiresAt }
      editorTitle.textContent = key
      editorTitle.classList.add('mono')
      keyField.input.value = key
      keyField.input.readOnly = true
      valueField.input.value = formatJson(entry.json)
      valueField.setError('')
      metaField.input.value = entry.metadata === null ? '' : formatJson(entry.metadata)
      metaField.setError('')
      ttlError.textContent = ''
      stale.hidden = true
      ttl.value = ''
      keepOption.hidden = entry.expiresAt === null
      keepOption.lastChild.textContent = entry.expiresAt
        ? `Keep the current expiry (${fmtDate(entry.expiresAt)})`
        : ''
      choose(entry.expiresAt === null ? 'never' : 'keep')
      del.hidden = false
      saveMeta.hidden = false
      list.mark(key)
      tabs.hidden = false
      await selectTab(shown)
      editorTitle.focus()
    } catch (err) {
      editorErrors.show(err.message)
    }
  }

  /** The expiry chosen: { mode, seconds } (seconds with mode ttl), or undefined when invalid. */
  const chosenExpiry = () => {
    const mode = expiry.querySelector('input[type=radio]:checked')?.value
    ttlError.textContent = ''
    if (mode !== 'ttl') return { mode }
    const n = Number(ttl.value)
    if (!Number.isInteger(n) || n < 1) {
      ttlError.textContent = 'Give a whole number of seconds, at least 1.'
      ttl.focus()
      return undefined
    }
    return { mode, seconds: n }
  }

  /** The form's metadata and expiry, or undefined (with the field to fix focused). */
  const metaAndExpiry = () => {
    const meta = metadata()
    if (meta === undefined) {
      metaField.input.focus()
      return undefined
    }
    const when = chosenExpiry()
    return when === undefined ? undefined : { meta, when }
  }

  /** The /v1 PUT body, built around the value's own text so no number is rounded. */
  const body = () => {
    const form = metaAndExpiry()
    if (form === undefined) return undefined
    const { meta, when } = form
    let tail = meta === null ? '' : `,"metadata":${meta}`
    if (when.mode === 'ttl') tail += `,"ttl":${when.seconds}`
    else if (when.mode === 'keep' && current?.expiresAt) tail += `,"expiresAt":${current.expiresAt}`
    return `{"value":${valueField.input.value}${tail}}`
  }

  /** A PATCH body: the metadata as it is in the form, and the expiry if it is to change. */
  const patchBody = () => {
    const form = metaAndExpiry()
    if (form === undefined) return undefined
    const { meta, when } = form
    let tail = ''
    if (when.mode === 'ttl') tail = `,"ttl":${when.seconds}`
    else if (when.mode === 'never' && current?.expiresAt) tail = ',"persist":true'
    return `{"metadata":${meta ?? 'null'}${tail}}`
  }

  editor.addEventListener('submit', async (e) => {
    e.preventDefault()
    editorErrors.show('')
    const key = keyField.input.value
    keyField.setError(key ? '' : 'Enter a key.')
    if (!key) return keyField.input.focus()
    if (!validate()) return valueField.input.focus()
    const text = body()
    if (text === undefined) return
    save.disabled = true
    try {
      // An edit must not overwrite someone else's change; a new key must not replace one.
      const headers = current ? { 'If-Match': `"${current.version}"` } : { 'If-None-Match': '*' }
      const res = await api('PUT', valueUrl(key), text, { raw: true, headers })
      if (current) current.version = res.version
      announce(res.created ? `Key ${key} created` : `Key ${key} saved`)
      await list.reload()
      await openKey(key)
    } catch (err) {
      showError(err)
    } finally {
      save.disabled = false
    }
  })

  // Metadata and expiry change in place: the value is not sent again.
  saveMeta.addEventListener('click', async () => {
    if (!current) return
    editorErrors.show('')
    const text = patchBody()
    if (text === undefined) return
    const { key, version } = current
    saveMeta.disabled = true
    try {
      const res = await api('PATCH', valueUrl(key), text, {
        raw: true,
        headers: { 'If-Match': `"${version}"` },
      })
      current.version = res.version
      announce(`Metadata and expiry of ${key} saved`)
      await list.reload()
      await openKey(key)
    } catch (err) {
      showError(err)
    } finally {
      saveMeta.disabled = false
    }
  })

  del.addEventListener('click', () => {
    if (!current) return
    const { key, version } = current
    const go = h('button', { type: 'button', class: 'btn btn-danger' }, 'Delete key')
    const cancel = h('button', { type: 'button', class: 'btn' }, 'Cancel')
    const errors = errorBox()
    const dlg = openDialog(
      `Delete “${key}”?`,
      h('div', {}, h('p', {}, 'The value is deleted for good.'), errors.box),
      [cancel, go],
    )
    cancel.addEventListener('click', () => dlg.close())
    go.addEventListener('click', async () => {
      go.disabled = true
      try {
        await api('DELETE', valueUrl(key), undefined, { headers: { 'If-Match': `"${version}"` } })
        dlg.close()
        announce(`Key ${key} deleted`)
        newKey()
        await list.reload()
      } catch (err) {
        errors.show(err.message)
        go.disabled = false
      }
    })
  })

  main.append(
    h(
      'nav',
      { 'aria-label': 'Breadcrumb', class: 'crumbs' },
      h('a', { href: '/namespaces' }, 'Namespaces'),
      h('span', { 'aria-hidden': 'true' }, ' / '),
      h('span', { 'aria-current': 'page' }, nsName),
    ),
    h(
      'div',
      { class: 'page-head row' },
      h('h1', {}, nsName),
      h(
        'div',
        { class: 'head-actions' },
        transferButtons(base, nsName, list),
        h(
          'button',
          { type: 'button', class: 'btn btn-primary', id: 'new-key', onclick: newKey },
          'New key',
        ),
      ),
    ),
    h('div', { class: 'browser' }, list.element, editor),
  )
  newKey(false)
  await list.reload()
}
