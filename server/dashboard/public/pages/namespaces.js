import {
  announce,
  api,
  errorBox,
  field,
  fmtBytes,
  fmtDate,
  fmtNum,
  h,
  openDialog,
  submitting,
} from '../lib.js'

const NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/

export async function render(main) {
  const listSlot = h('div')
  const refresh = async () => {
    const { namespaces } = await api('GET', '/namespaces')
    listSlot.replaceChildren(table(namespaces))
  }

  const table = (rows) => {
    if (rows.length === 0) {
      return h(
        'p',
        { class: 'empty card' },
        'No namespaces yet. Create one below, then add keys to it.',
      )
    }
    return h(
      'div',
      { class: 'card table-wrap' },
      h(
        'table',
        { class: 'table stack', id: 'ns-table' },
        h('caption', { class: 'visually-hidden' }, 'Your namespaces'),
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            ['Name', 'Keys', 'Size', 'Created', 'Actions'].map((t) =>
              h('th', { scope: 'col', class: t === 'Keys' || t === 'Size' ? 'num' : null }, t),
            ),
          ),
        ),
        h(
          'tbody',
          {},
          rows.map((n) =>
            h(
              'tr',
              { 'data-ns': n.name },
              h(
                'td',
                { 'data-label': 'Name' },
                h(
                  'a',
                  { href: `/namespaces/${encodeURIComponent(n.name)}` },
                  h('strong', {}, n.name),
                ),
              ),
              h('td', { 'data-label': 'Keys', class: 'num' }, fmtNum(n.keys)),
              h('td', { 'data-label': 'Size', class: 'num' }, fmtBytes(n.bytes)),
              h('td', { 'data-label': 'Created' }, n.createdAt ? fmtDate(n.createdAt) : '–'),
              h(
                'td',
                { 'data-label': 'Actions', class: 'row-actions' },
                h(
                  'a',
                  { class: 'btn btn-small', href: `/namespaces/${encodeURIComponent(n.name)}` },
                  'Browse',
                ),
                h(
                  'button',
                  {
                    type: 'button',
                    class: 'btn btn-small btn-danger',
                    'aria-label': `Delete ${n.name}`,
                    onclick: () => remove(n),
                  },
                  'Delete',
                ),
              ),
            ),
          ),
        ),
      ),
    )
  }

  const remove = (n) => {
    const confirm = field({
      label: `Type ${n.name} to confirm`,
      name: 'confirm',
      autocomplete: 'off',
      spellcheck: 'false',
    })
    const errors = errorBox()
    const go = h(
      'button',
      { type: 'button', class: 'btn btn-danger', disabled: true },
      'Delete namespace',
    )
    const cancel = h('button', { type: 'button', class: 'btn' }, 'Cancel')
    confirm.input.addEventListener('input', () => {
      go.disabled = confirm.input.value !== n.name
    })
    const dlg = openDialog(
      `Delete “${n.name}”?`,
      h(
        'div',
        {},
        h('p', {}, `All ${fmtNum(n.keys)} keys in it are deleted for good.`),
        errors.box,
        confirm.wrap,
      ),
      [cancel, go],
    )
    confirm.input.focus()
    cancel.addEventListener('click', () => dlg.close())
    go.addEventListener('click', async () => {
      go.disabled = true
      try {
        await api('DELETE', `/namespaces/${encodeURIComponent(n.name)}`, {
          confirm: confirm.input.value,
        })
        dlg.close()
        await refresh()
        announce(`Namespace ${n.name} deleted`)
      } catch (err) {
        errors.show(err.message)
        go.disabled = false
      }
    })
  }

  const name = field({
    label: 'Name',
    name: 'name',
    required: true,
    autocomplete: 'off',
    spellcheck: 'false',
    hint: 'Letters, digits, - and _; up to 64 characters, starting with a letter or digit.',
  })
  const errors = errorBox()
  const form = h(
    'form',
    { class: 'card', id: 'create-ns', novalidate: true },
    h('h2', {}, 'Create a namespace'),
    errors.box,
    h(
      'div',
      { class: 'inline-form' },
      name.wrap,
      h('button', { type: 'submit', class: 'btn btn-primary' }, 'Create'),
    ),
  )
  submitting(form, errors, async (data) => {
    const value = String(data.get('name') ?? '')
    const bad = !NAME.test(value) || value === 'namespaces' || value === 'usage'
    name.setError(bad ? 'Use 1 to 64 letters, digits, - or _ (not “namespaces” or “usage”).' : '')
    if (bad) {
      name.input.focus()
      return
    }
    await api('POST', '/namespaces', { name: value })
    form.reset()
    await refresh()
    announce(`Namespace ${value} created`)
  })

  await refresh()
  main.append(
    h(
      'div',
      { class: 'page-head' },
      h('h1', {}, 'Namespaces'),
      h('p', { class: 'muted' }, 'Keys live in namespaces. Open one to browse and edit its data.'),
    ),
    listSlot,
    form,
  )
}
