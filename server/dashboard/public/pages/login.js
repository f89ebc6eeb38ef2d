import { api, errorBox, field, h, safeNext, submitting } from '../lib.js'

export function render(main) {
  document.title = 'Log in · Cairn'
  const email = field({
    label: 'Email',
    name: 'email',
    type: 'email',
    autocomplete: 'email',
    required: true,
  })
  const password = field({
    label: 'Password',
    name: 'password',
    type: 'password',
    autocomplete: 'current-password',
    required: true,
  })
  const errors = errorBox()
  const form = h(
    'form',
    { class: 'card form-card', novalidate: true },
    h('h1', {}, 'Log in to Cairn'),
    errors.box,
    email.wrap,
    password.wrap,
    h('button', { type: 'submit', class: 'btn btn-primary btn-block' }, 'Log in'),
    h(
      'p',
      { class: 'muted center' },
      'New here? ',
      h('a', { href: '/signup' }, 'Create an account'),
    ),
  )
  submitting(form, errors, async (data) => {
    await api('POST', '/login', { email: data.get('email'), password: data.get('password') })
    location.assign(safeNext(new URLSearchParams(location.search).get('next')))
  })
  main.append(form)
  email.input.focus()
}
