import { announce, api, errorBox, field, fmtDate, h, openDialog, submitting } from '../lib.js'
import { notificationsSection } from './notifications.js'

export async function render(main, { me }) {
  const { account } = me
  const current = field({
    label: 'Current password',
    name: 'current',
    type: 'password',
    autocomplete: 'current-password',
    required: true,
  })
  const next = field({
    label: 'New password',
    name: 'password',
    type: 'password',
    autocomplete: 'new-password',
    minlength: '8',
    required: true,
    hint: 'At least 8 characters. Other signed-in browsers are signed out.',
  })
  const again = field({
    label: 'New password again',
    name: 'again',
    type: 'password',
    autocomplete: 'new-password',
    required: true,
  })
  const errors = errorBox()
  const done = h('div', { class: 'alert alert-ok', role: 'status', hidden: true })
  const form = h(
    'form',
    { class: 'card', id: 'password-form', novalidate: true },
    h('h2', {}, 'Change password'),
    errors.box,
    done,
    current.wrap,
    h('div', { class: 'grid-2' }, next.wrap, again.wrap),
    h('button', { type: 'submit', class: 'btn btn-primary' }, 'Change password'),
  )
  submitting(form, errors, async (data) => {
    done.hidden = true
    const pw = String(data.get('password'))
    next.setError(pw.length < 8 ? 'The new password needs at least 8 characters.' : '')
    again.setError(pw !== data.get('again') ? 'The two new passwords differ.' : '')
    if (pw.length < 8 || pw !== data.get('again')) return
    await api('POST', '/password', { current: data.get('current'), password: pw })
    form.reset()
    done.textContent = 'Your password was changed.'
    done.hidden = false
    announce('Password changed')
  })

  const remove = () => {
    const confirm = field({
      label: `Type ${account.email} to confirm`,
      name: 'confirm',
      autocomplete: 'off',
    })
    const pw = field({
      label: 'Password',
      name: 'password',
      type: 'password',
      autocomplete: 'current-password',
    })
    const errs = errorBox()
    const go = h('button', { type: 'button', class: 'btn btn-danger' }, 'Delete my account')
    const cancel = h('button', { type: 'button', class: 'btn' }, 'Cancel')
    const dlg = openDialog(
      'Delete your account?',
      h(
        'div',
        {},
        h(
          'p',
          {},
          'Your namespaces, every key and value in them, your API keys and your usage history are deleted. This cannot be undone.',
        ),
        errs.box,
        confirm.wrap,
        pw.wrap,
      ),
      [cancel, go],
    )
    confirm.input.focus()
    cancel.addEventListener('click', () => dlg.close())
    go.addEventListener('click', async () => {
      go.disabled = true
      try {
        await api('POST', '/account/delete', {
          confirm: confirm.input.value,
          password: pw.input.value,
        })
        location.assign('/signup')
      } catch (err) {
        errs.show(err.message)
        go.disabled = false
      }
    })
  }

  main.append(
    h('div', { class: 'page-head' }, h('h1', {}, 'Account')),
    h(
      'section',
      { class: 'card' },
      h('h2', {}, 'Details'),
      h(
        'dl',
        { class: 'details' },
        h('div', {}, h('dt', {}, 'Email'), h('dd', {}, account.email)),
        h('div', {}, h('dt', {}, 'Account id'), h('dd', {}, h('code', {}, account.id))),
        h('div', {}, h('dt', {}, 'Plan'), h('dd', {}, me.plan?.name ?? account.plan)),
        h('div', {}, h('dt', {}, 'Created'), h('dd', {}, fmtDate(account.createdAt))),
      ),
    ),
    form,
    await notificationsSection(),
    h(
      'section',
      { class: 'card danger-zone', 'aria-labelledby': 'danger-h' },
      h('h2', { id: 'danger-h' }, 'Delete account'),
      h('p', {}, 'Deletes the account and all its data for good.'),
      h(
        'button',
        { type: 'button', class: 'btn btn-danger', id: 'delete-account', onclick: remove },
        'Delete account…',
      ),
    ),
  )
}
