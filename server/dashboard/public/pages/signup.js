import { api, errorBox, field, h, secretPanel, submitting } from '../lib.js'

export function render(main) {
  document.title = 'Sign up · Cairn'
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
    autocomplete: 'new-password',
    minlength: '8',
    required: true,
    hint: 'At least 8 characters.',
  })
  const errors = errorBox()
  const form = h(
    'form',
    { class: 'card form-card', novalidate: true },
    h('h1', {}, 'Create your Cairn account'),
    h('p', { class: 'muted' }, 'You start on the free plan and get an API key straight away.'),
    errors.box,
    email.wrap,
    password.wrap,
    h('button', { type: 'submit', class: 'btn btn-primary btn-block' }, 'Sign up'),
    h(
      'p',
      { class: 'muted center' },
      'Already have an account? ',
      h('a', { href: '/login' }, 'Log in'),
    ),
  )
  submitting(form, errors, async (data) => {
    const pw = String(data.get('password'))
    password.setError(pw.length < 8 ? 'The password needs at least 8 characters.' : '')
    if (pw.length < 8) {
      password.input.focus()
      return
    }
    const made = await api('POST', '/signup', { email: data.get('email'), password: pw })
    // The session's token replaces the sign-up form's for the calls that follow.
    document.querySelector('meta[name="csrf-token"]').content = made.csrf
    main.classList.remove('narrow')
    main.replaceChildren(
      h('h1', {}, 'Welcome to Cairn'),
      h(
        'p',
        { class: 'lead' },
        `Your account ${made.account.email} is ready, on the free plan. Here is your first API key.`,
      ),
      secretPanel(made.apiKey.secret, 'Your API key'),
      // No session came with it (the server could not store one just then): say what is next.
      ...(made.csrf === ''
        ? [h('p', {}, 'Copy the key now, then sign in with your email and password to continue.')]
        : []),
      h(
        'p',
        { class: 'actions' },
        h('a', { class: 'btn btn-primary', href: '/' }, 'Go to the dashboard'),
        h('a', { class: 'btn', href: '/namespaces' }, 'Create a namespace'),
      ),
    )
    main.focus()
  })
  main.append(form)
  email.input.focus()
}
