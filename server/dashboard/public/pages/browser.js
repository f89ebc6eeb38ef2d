import { formatJson } from '../json-format.js'
import { announce, api, errorBox, field, fmtDate, h, openDialog } from '../lib.js'
import { keyList } from './browser-list.js'

export async function render(main) {
  const nsName = decodeURIComponent(location.pathname.split('/')[2] ?? '')
  document.title = `${nsName} · Data browser · Cairn`
  const base = `/namespaces/${encodeURIComponent(nsName)}`
  const valueUrl = (key) => `${base}/value?${new URLSearchParams({ key })}`
  // The entry being edited: { key, version, expiresAt }, or null for a new one.
  let current = null

  const list = keyList(base, (key) => openKey(key))

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
  const del = h(
    'button',
    { type: 'button', class: 'btn btn-danger', id: 'delete-value', hidden: true },
    'Delete key',
  )
  const editor = h(
    'form',
    { class: 'card editor', id: 'editor', novalidate: true, 'aria-labelledby': 'editor-title' },
    editorTitle,
    editorErrors.box,
    keyField.wrap,
    valueField.wrap,
    expiry,
    h('div', { class: 'actions' }, save, format, del),
  )

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
    ttl.value = ''
    keepOption.hidden = true
    choose('never')
    del.hidden = true
    editorErrors.show('')
    valueField.setError('')
    list.mark(null)
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
      ttl.value = ''
      keepOption.hidden = entry.expiresAt === null
      keepOption.lastChild.textContent = entry.expiresAt
        ? `Keep the current expiry (${fmtDate(entry.expiresAt)})`
        : ''
      choose(entry.expiresAt === null ? 'never' : 'keep')
      del.hidden = false
      list.mark(key)
      editorTitle.focus()
    } catch (err) {
      editorErrors.show(err.message)
    }
  }

  /** The /v1 PUT body, built around the value's own text so no number is rounded. */
  const body = () => {
    const mode = expiry.querySelector('input[type=radio]:checked')?.value
    ttlError.textContent = ''
    let tail = ''
    if (mode === 'ttl') {
      const n = Number(ttl.value)
      if (!Number.isInteger(n) || n < 1) {
        ttlError.textContent = 'Give a whole number of seconds, at least 1.'
        ttl.focus()
        return undefined
      }
      tail = `,"ttl":${n}`
    } else if (mode === 'keep' && current?.expiresAt) tail = `,"expiresAt":${current.expiresAt}`
    return `{"value":${valueField.input.value}${tail}}`
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
      announce(res.created ? `Key ${key} created` : `Key ${key} saved`)
      await list.reload()
      await openKey(key)
    } catch (err) {
      editorErrors.show(
        err.status === 412
          ? current
            ? 'This value changed since you opened it. Open the key again to see the new value.'
            : 'A key with this name already exists. Open it from the list to edit it.'
          : err.message,
      )
    } finally {
      save.disabled = false
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
        'button',
        { type: 'button', class: 'btn btn-primary', id: 'new-key', onclick: newKey },
        'New key',
      ),
    ),
    h('div', { class: 'browser' }, list.element, editor),
  )
  newKey(false)
  await list.reload()
}
