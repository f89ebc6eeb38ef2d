import {
  announce,
  api,
  errorBox,
  field,
  fmtDate,
  h,
  openDialog,
  secretPanel,
  submitting,
} from '../lib.js'

export async function render(main) {
  const [{ keys }, { namespaces }] = await Promise.all([
    api('GET', '/keys'),
    api('GET', '/namespaces'),
  ])
  const secretSlot = h('div', { id: 'secret-slot' })
  const listSlot = h('div')
  // The key whose secret the panel shows: revoking it takes the panel away.
  let shownId = null

  const showSecret = async (secret, heading, key) => {
    // The examples use the key's own permission and namespaces, and the namespaces as they are now.
    const { namespaces: now } = await api('GET', '/namespaces')
    secretSlot.replaceChildren(
      secretPanel(
        secret,
        heading,
        key,
        now.map((n) => n.name),
      ),
    )
    shownId = key.id
    secretSlot.querySelector('h2').setAttribute('tabindex', '-1')
    secretSlot.querySelector('h2').focus()
  }

  const refresh = async () => {
    const fresh = await api('GET', '/keys')
    listSlot.replaceChildren(table(fresh.keys))
  }

  const table = (rows) => {
    if (rows.length === 0) return h('p', { class: 'empty card' }, 'No API keys. Create one below.')
    return h(
      'div',
      { class: 'card table-wrap' },
      h(
        'table',
        { class: 'table stack', id: 'keys-table' },
        h('caption', { class: 'visually-hidden' }, 'Your API keys'),
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            ['Name', 'Key', 'Permission', 'Scope', 'Created', 'Last used', 'Actions'].map((t) =>
              h('th', { scope: 'col' }, t),
            ),
          ),
        ),
        h(
          'tbody',
          {},
          rows.map((k) =>
            h(
              'tr',
              { 'data-key-id': k.id, 'data-key-name': k.name },
              h('td', { 'data-label': 'Name' }, h('strong', {}, k.name)),
              h('td', { 'data-label': 'Key' }, h('code', {}, `${k.prefix}…`)),
              h(
                'td',
                { 'data-label': 'Permission' },
                h(
                  'span',
                  { class: `pill ${k.permission === 'read' ? 'pill-read' : 'pill-rw'}` },
                  k.permission,
                ),
              ),
              h(
                'td',
                { 'data-label': 'Scope' },
                k.namespaces?.length ? k.namespaces.join(', ') : 'All namespaces',
              ),
              h('td', { 'data-label': 'Created' }, fmtDate(k.createdAt)),
              h('td', { 'data-label': 'Last used' }, fmtDate(k.lastUsedAt)),
              h(
                'td',
                { 'data-label': 'Actions', class: 'row-actions' },
                h(
                  'button',
                  {
                    type: 'button',
                    class: 'btn btn-small',
                    onclick: () => rotate(k),
                    'aria-label': `Rotate ${k.name}`,
                  },
                  'Rotate',
                ),
                h(
                  'button',
                  {
                    type: 'button',
                    class: 'btn btn-small btn-danger',
                    onclick: () => revoke(k),
                    'aria-label': `Revoke ${k.name}`,
                  },
                  'Revoke',
                ),
              ),
            ),
          ),
        ),
      ),
    )
  }

  const confirmThen = (title, text, actionLabel, danger, action) => {
    const errors = errorBox()
    const go = h(
      'button',
      { type: 'button', class: `btn ${danger ? 'btn-danger' : 'btn-primary'}` },
      actionLabel,
    )
    const cancel = h('button', { type: 'button', class: 'btn' }, 'Cancel')
    const dlg = openDialog(title, h('div', {}, h('p', {}, text), errors.box), [cancel, go])
    cancel.addEventListener('click', () => dlg.close())
    go.addEventListener('click', async () => {
      go.disabled = true
      try {
        await action()
        dlg.close()
      } catch (err) {
        errors.show(err.message)
        go.disabled = false
      }
    })
  }

  const rotate = (k) =>
    confirmThen(
      `Rotate “${k.name}”?`,
      'A new secret replaces this one at once; programs using the old secret will get 401 until you update them.',
      'Rotate key',
      false,
      async () => {
        const made = await api('POST', `/keys/${encodeURIComponent(k.id)}/rotate`)
        await refresh()
        await showSecret(made.secret, `New secret for “${k.name}”`, k)
        announce(`Key ${k.name} rotated`)
      },
    )

  const revoke = (k) =>
    confirmThen(
      `Revoke “${k.name}”?`,
      'Requests with this key will be refused from now on. This cannot be undone.',
      'Revoke key',
      true,
      async () => {
        await api('POST', `/keys/${encodeURIComponent(k.id)}/revoke`)
        if (shownId === k.id) {
          secretSlot.replaceChildren()
          shownId = null
        }
        await refresh()
        announce(`Key ${k.name} revoked`)
      },
    )

  // Create form
  const name = field({
    label: 'Name',
    name: 'name',
    required: true,
    maxlength: '100',
    placeholder: 'e.g. production',
  })
  const permission = field({
    label: 'Permission',
    name: 'permission',
    type: 'select',
    options: [
      h('option', { value: 'read-write' }, 'Read and write'),
      h('option', { value: 'read' }, 'Read only'),
    ],
  })
  const scopeAll = h('input', {
    type: 'radio',
    name: 'scope',
    value: 'all',
    id: 'scope-all',
    checked: true,
  })
  const scopeSome = h('input', { type: 'radio', name: 'scope', value: 'some', id: 'scope-some' })
  const nsBoxes = namespaces.map((n) =>
    h(
      'label',
      { class: 'check' },
      h('input', { type: 'checkbox', name: 'ns', value: n.name }),
      n.name,
    ),
  )
  const extra = field({
    label: 'Other namespaces',
    name: 'extra',
    hint: 'Comma-separated names, also ones you will create later.',
  })
  const scopeDetail = h('div', { class: 'scope-detail', hidden: true }, nsBoxes, extra.wrap)
  const syncScope = () => {
    scopeDetail.hidden = !scopeSome.checked
  }
  scopeAll.addEventListener('change', syncScope)
  scopeSome.addEventListener('change', syncScope)
  const errors = errorBox()
  const form = h(
    'form',
    { class: 'card', id: 'create-key', novalidate: true },
    h('h2', {}, 'Create a key'),
    errors.box,
    h('div', { class: 'grid-2' }, name.wrap, permission.wrap),
    h(
      'fieldset',
      { class: 'field' },
      h('legend', {}, 'Namespaces it may use'),
      h('label', { class: 'check', for: 'scope-all' }, scopeAll, 'All namespaces'),
      h('label', { class: 'check', for: 'scope-some' }, scopeSome, 'Only these namespaces'),
      scopeDetail,
    ),
    h('button', { type: 'submit', class: 'btn btn-primary' }, 'Create key'),
  )
  submitting(form, errors, async (data) => {
    const keyName = String(data.get('name') ?? '').trim()
    name.setError(keyName ? '' : 'Give the key a name.')
    if (!keyName) {
      name.input.focus()
      return
    }
    let scope = null
    if (data.get('scope') === 'some') {
      scope = [
        ...data.getAll('ns').map(String),
        ...String(data.get('extra') ?? '')
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean),
      ]
      if (scope.length === 0)
        throw new Error('Pick at least one namespace, or choose all namespaces.')
    }
    const made = await api('POST', '/keys', {
      name: keyName,
      permission: data.get('permission'),
      namespaces: scope,
    })
    form.reset()
    syncScope()
    await refresh()
    await showSecret(made.secret, `New key “${made.key.name}”`, made.key)
    announce(`Key ${made.key.name} created`)
  })

  listSlot.append(table(keys))
  main.append(
    h(
      'div',
      { class: 'page-head' },
      h('h1', {}, 'API keys'),
      h(
        'p',
        { class: 'muted' },
        'Send a key in the x-api-key header. Only a hash of each key is stored.',
      ),
    ),
    secretSlot,
    listSlot,
    form,
  )
}
